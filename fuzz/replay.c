/* replay: runs a fuzz target's LLVMFuzzerTestOneInput over every file of the directories (or
 * files) given, once each, without libFuzzer: how `make test` replays fuzz/corpus/<target>/ so
 * that an input that once crashed a parser (its reproducer is added to the corpus) never
 * crashes it again. Built with each fuzz_*.c under any compiler; the sanitizers of the build
 * catch what libFuzzer would. Exits 0 after the last input, 1 when an input cannot be read. */
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <dirent.h>
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
    fclose(f);
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

int main(int argc, char **argv)
{
    int failed = 0, runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0 || !S_ISDIR(st.st_mode)) {
            failed |= run_file(argv[i]);
            runs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], sw_strerror(errno));
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
        for (size_t j = 0; j < nn; j++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], names[j]);
            failed |= run_file(path);
            runs++;
            sw_free(names[j]);
        }
        sw_free(names);
    }
    printf("replay: %d input(s)\n", runs);
    return failed || runs == 0;
}
