/* server: `slipway server` (placeholder until the API server lands). */
#include "cmd/cmd.h"

#include <stdio.h>

int sw_cmd_server(int argc, char **argv)
{
    fprintf(stderr, "slipway server: not built yet\n");
    return 1;
}
