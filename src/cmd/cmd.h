/* cmd: the subcommand table shared by main.c and the one-file-per-command sources. */
#ifndef SW_CMD_H
#define SW_CMD_H

#include <stdbool.h>
#include <stddef.h>

struct sw_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

int sw_cmd_server(int argc, char **argv);
int sw_cmd_controllers(int argc, char **argv);
int sw_cmd_import_image(int argc, char **argv);
int sw_cmd_tag(int argc, char **argv);
int sw_cmd_describe(int argc, char **argv);
int sw_cmd_version(int argc, char **argv);
int sw_cmd_builder(int argc, char **argv);
int sw_cmd_new_build(int argc, char **argv);
int sw_cmd_start_build(int argc, char **argv);
int sw_cmd_logs(int argc, char **argv);
int sw_cmd_cancel_build(int argc, char **argv);
int sw_cmd_set(int argc, char **argv);
int sw_cmd_rollout(int argc, char **argv);
int sw_cmd_crds(int argc, char **argv);
int sw_cmd_envtest_assets(int argc, char **argv);
int sw_cmd_completion(int argc, char **argv);

/* The command table (main.c), for completion.c. */
extern const struct sw_cmd sw_commands[];
extern const size_t sw_ncommands;

/* logs.c, shared with start-build --follow: writes the log of build ns/name to stdout as it
 * arrives (follow: until the build finishes; tail_lines < 0: the whole log). 0 or SW_E*. */
struct sw_client;
int sw_cmd_build_log(struct sw_client *c, const char *ns, const char *build, bool follow,
                     long long tail_lines);

#endif
