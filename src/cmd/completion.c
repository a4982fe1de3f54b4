/* completion: `slipway completion bash|zsh` prints a shell completion script. Commands come
 * from the command table; a command's flags are read from its own --help when completing, so
 * the script never goes stale as flags are added. */
#include "cmd/cmd.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: slipway completion bash|zsh\n\n"
               "Prints a completion script for the shell: commands, then each command's flags\n"
               "(as its --help lists them).\n\n"
               "  bash:  source <(slipway completion bash)\n"
               "         (or save it as /etc/bash_completion.d/slipway)\n"
               "  zsh:   source <(slipway completion zsh)\n"
               "         (or save it as _slipway in a directory of $fpath)\n");
}

static void bash_script(void)
{
    printf("# bash completion for slipway (slipway completion bash)\n"
           "_slipway()\n"
           "{\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]}\n"
           "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
           "        COMPREPLY=($(compgen -W \"");
    for (size_t i = 0; i < sw_ncommands; i++)
        printf("%s%s", i ? " " : "", sw_commands[i].name);
    printf("\" -- \"$cur\"))\n"
           "        return\n"
           "    fi\n"
           "    case $cur in\n"
           "    -*)\n"
           "        local flags\n"
           "        flags=$(\"${COMP_WORDS[0]}\" \"${COMP_WORDS[1]}\" --help 2>/dev/null |\n"
           "            grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)\n"
           "        COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
           "        ;;\n"
           "    *)\n"
           "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
           "        ;;\n"
           "    esac\n"
           "}\n"
           "complete -F _slipway slipway\n");
}

static void zsh_script(void)
{
    printf("#compdef slipway\n"
           "# zsh completion for slipway (slipway completion zsh)\n"
           "_slipway()\n"
           "{\n"
           "    local -a commands flags\n"
           "    commands=(\n");
    for (size_t i = 0; i < sw_ncommands; i++) {
        printf("        '%s:", sw_commands[i].name);
        for (const char *p = sw_commands[i].summary; *p; p++)
            fputs(*p == '\'' ? "'\\''" : (char[]){*p, '\0'}, stdout);
        printf("'\n");
    }
    printf("    )\n"
           "    if (( CURRENT == 2 )); then\n"
           "        _describe 'command' commands\n"
           "        return\n"
           "    fi\n"
           "    if [[ $words[CURRENT] == -* ]]; then\n"
           "        flags=(${(f)\"$($words[1] $words[2] --help 2>/dev/null |\n"
           "            grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)\"})\n"
           "        compadd -- $flags\n"
           "        return\n"
           "    fi\n"
           "    _files\n"
           "}\n"
           "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
           "    _slipway \"$@\"\n"
           "else\n"
           "    compdef _slipway slipway\n"
           "fi\n");
}

int sw_cmd_completion(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 2 || (strcmp(argv[1], "bash") && strcmp(argv[1], "zsh"))) {
        fprintf(stderr, "error: slipway completion needs one shell: bash or zsh\n"
                        "See 'slipway completion --help'.\n");
        return 2;
    }
    if (!strcmp(argv[1], "bash"))
        bash_script();
    else
        zsh_script();
    return 0;
}
