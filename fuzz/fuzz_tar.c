/* fuzz_tar: libFuzzer target for the tar reader (src/image/tarread, libarchive underneath)
 * and the deterministic writer (src/image/tar). Any input either fails cleanly or reads into
 * entries; those are written as a tar, which must read back and write again to the very same
 * bytes (the writer's output is a fixed point of read+write). In memory only, with small
 * caps. Seeds: fuzz/corpus/tar/. */
#include "image/tar.h"
#include "image/tarread.h"
#include "util/alloc.h"
#include "util/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
done:
    sw_tar_free(t);
    sw_tar_free(t2);
    sw_buf_dispose(&first);
    sw_buf_dispose(&second);
    return 0;
}
