/* fuzz_tar: libFuzzer target for the tar reader (src/image/tarread, libarchive underneath)
 * and the deterministic writer (src/image/tar). Any input either fails cleanly or reads into
 * entries; those are written as a tar, which must read back and write again to the very same
 * bytes (the writer's output is a fixed point of read+write). The input is also read from a
 * file with `in_place` (contents named where they lie in the archive, or spooled), which must
 * give exactly the tar the in-memory read gave. Small caps. Seeds: fuzz/corpus/tar/. */
#include "image/tar.h"
#include "image/tarread.h"
#include "util/alloc.h"
#include "util/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int collect(void *payload, const void *p, size_t n)
{
    return sw_buf_put(payload, p, n);
}

static int read_into(const void *p, size_t n, sw_tar **out)
{
    sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
    o.max_bytes = 1 << 20;
    o.max_entries = 512;
    sw_tar_new(out);
    return sw_tarread_add_mem(*out, p, n, &o, NULL);
}

/* The input as a file, read with in_place + spool_file, written as a tar into out. */
static int read_in_place(const void *p, size_t n, sw_buf *out)
{
    char path[64], spool[64];
    snprintf(path, sizeof(path), "/tmp/fuzz_tar.%d.in", (int)getpid());
    snprintf(spool, sizeof(spool), "/tmp/fuzz_tar.%d.spool", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        abort();
    unlink(spool);
    sw_tarread_opts o = SW_TARREAD_OPTS_INIT;
    o.max_bytes = 1 << 20;
    o.max_entries = 512;
    o.spool_file = spool;
    o.in_place = true;
    sw_tar *t = NULL;
    sw_tar_new(&t);
    int error = sw_tarread_add_file(t, path, &o, NULL);
    if (error == 0)
        error = sw_tar_write(t, 0, collect, out); /* reads the ranges while both files exist */
    sw_tar_free(t);
    unlink(path);
    unlink(spool);
    return error;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sw_tar *t = NULL, *t2 = NULL;
    sw_buf first = SW_BUF_INIT(8 << 20), second = SW_BUF_INIT(8 << 20);
    if (read_into(data, size, &t) < 0)
        goto done;
    if (sw_tar_write(t, 0, collect, &first) < 0) /* duplicates, dangling hard links */
        goto done;
    if (read_into(first.ptr, first.len, &t2) < 0)
        abort(); /* our own output must always read */
    if (sw_tar_count(t2) != sw_tar_count(t))
        abort();
    if (sw_tar_write(t2, 0, collect, &second) < 0)
        abort();
    if (first.len != second.len || memcmp(first.ptr, second.ptr, first.len) != 0)
        abort();
    sw_buf_clear(&second);
    if (read_in_place(data, size, &second) < 0)
        abort(); /* what reads from memory reads from a file */
    if (first.len != second.len || memcmp(first.ptr, second.ptr, first.len) != 0)
        abort();
done:
    sw_tar_free(t);
    sw_tar_free(t2);
    sw_buf_dispose(&first);
    sw_buf_dispose(&second);
    return 0;
}
