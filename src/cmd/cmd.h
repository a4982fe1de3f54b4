/* cmd: the subcommand table shared by main.c and the one-file-per-command sources. */
#ifndef SW_CMD_H
#define SW_CMD_H

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

#endif
