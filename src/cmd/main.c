/* main: dispatches `slipway <command>` to the subcommand files in src/cmd/. */
#include "cmd/cmd.h"

#include <stdio.h>
#include <string.h>

const struct sw_cmd sw_commands[] = {
    {"server", "run the Kubernetes-compatible API server", sw_cmd_server},
    {"controllers", "run the controllers alone, against any API server", sw_cmd_controllers},
    {"import-image", "import images from a container registry into an image stream",
     sw_cmd_import_image},
    {"tag", "tag images into image streams, or delete tags", sw_cmd_tag},
    {"describe", "show image streams, images, builds and ManagedImages", sw_cmd_describe},
    {"new-build", "create a build configuration (and its image stream)", sw_cmd_new_build},
    {"start-build", "start a new build of a build configuration", sw_cmd_start_build},
    {"logs", "print the log of a build", sw_cmd_logs},
    {"cancel-build", "cancel running, pending or new builds", sw_cmd_cancel_build},
    {"set", "set triggers: list or change a workload's image triggers", sw_cmd_set},
    {"rollout", "start, list, undo or watch the versions of a DeploymentConfig", sw_cmd_rollout},
    {"crds", "write CustomResourceDefinitions of slipway's kinds, for envtest and clusters",
     sw_cmd_crds},
    {"envtest-assets", "write a KUBEBUILDER_ASSETS directory whose kube-apiserver is slipway",
     sw_cmd_envtest_assets},
    {"builder", "run one build (started by the build controller)", sw_cmd_builder},
    {"completion", "print a bash or zsh completion script", sw_cmd_completion},
    {"version", "print the version", sw_cmd_version},
};
const size_t sw_ncommands = sizeof(sw_commands) / sizeof(sw_commands[0]);

static void usage(FILE *f)
{
    fprintf(f, "Usage: slipway <command> [flags]\n\nCommands:\n");
    for (size_t i = 0; i < sw_ncommands; i++)
        fprintf(f, "  %-12s %s\n", sw_commands[i].name, sw_commands[i].summary);
    fprintf(f, "\nRun 'slipway <command> --help' for a command's flags.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return sw_cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sw_ncommands; i++)
        if (!strcmp(argv[1], sw_commands[i].name))
            return sw_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "slipway: unknown command %s\n", argv[1]);
    usage(stderr);
    return 2;
}
