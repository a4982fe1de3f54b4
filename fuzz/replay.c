/* replay: runs a fuzz target's LLVMFuzzerTestOneInput over every file of the directories (or
 * files) given, once each, without libFuzzer: how `make test` replays fuzz/corpus/<target>/ so
 * that an input that once crashed a parser (its reproducer is added to the corpus) never
 * crashes it again. Built with each fuzz_*.c under any compiler; the sanitizers of the build
 * catch what libFuzzer would. Subdirectories are read too. Exits 0 after the last input, 1 when
 * an input cannot be read or there was none. */
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT (16u * 1024 * 1024)

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, sw_strerror(errno));
        return 1;
    }
    sw_buf b = SW_BUF_INIT(REPLAY_MAX_INPUT);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        sw_buf_put(&b, chunk, n);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: %s: cannot read it\n", path);
        sw_buf_dispose(&b);
        return 1;
    }
    if (sw_buf_error(&b) < 0) {
        fprintf(stderr, "replay: %s: larger than %u bytes\n", path, REPLAY_MAX_INPUT);
        sw_buf_dispose(&b);
        return 1;
    }
    /* an exact-size copy: ASan then sees a read past the input */
    uint8_t *in = sw_malloc(b.len ? b.len : 1);
    memcpy(in, b.ptr ? b.ptr : "", b.len);
    LLVMFuzzerTestOneInput(in, b.len);
    sw_free(in);
    sw_buf_dispose(&b);
    return 0;
}

static int names_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs path, a file or a directory (its entries in name order, recursively). */
static int replay(const char *path, int *runs, int depth)
{
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
        (*runs)++;
        return run_file(path);
    }
    DIR *d = depth < 8 ? opendir(path) : NULL;
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", path, depth < 8 ? sw_strerror(errno) : "too deep");
        return 1;
    }
    char **names = NULL;
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        names = sw_realloc(names, (nn + 1) * sizeof(*names));
        names[nn++] = sw_strdup(e->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof(*names), names_cmp);
    int failed = 0;
    for (size_t j = 0; j < nn; j++) {
        char sub[4096];
        snprintf(sub, sizeof(sub), "%s/%s", path, names[j]);
        failed |= replay(sub, runs, depth + 1);
        sw_free(names[j]);
    }
    sw_free(names);
    return failed;
}

int main(int argc, char **argv)
{
    int failed = 0, runs = 0;
    for (int i = 1; i < argc; i++)
        failed |= replay(argv[i], &runs, 0);
    printf("replay: %d input(s)\n", runs);
    return failed || runs == 0;
}
