/* version: `slipway version` prints the client version. */
#include "cmd/cmd.h"

#include <stdio.h>
#include <string.h>

int sw_cmd_version(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("Usage: slipway version\n\nPrints slipway's version.\n");
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr,
                "error: slipway version takes no arguments (got \"%.100s\")\n"
                "See 'slipway version --help'.\n",
                argv[1]);
        return 2;
    }
    printf("slipway %s (Kubernetes API v1.32 compatible)\n", SW_VERSION);
    return 0;
}
