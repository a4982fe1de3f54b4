/* fuzz_manifest: libFuzzer target for the JSON payload parsers of src/registry: manifests
 * (src/registry/manifest), image config blobs, and docker config Secret payloads
 * (src/registry/dockercfg). The first input byte picks the Content-Type handed to the manifest
 * parser; the rest is the body. Every accessor of a parsed manifest and config is exercised.
 * Seeds: fuzz/corpus/manifest/. */
#include "registry/dockercfg.h"
#include "registry/manifest.h"
#include "registry/ref.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const content_types[] = {
    SW_MEDIA_OCI_MANIFEST,
    SW_MEDIA_OCI_INDEX,
    SW_MEDIA_DOCKER_MANIFEST,
    SW_MEDIA_DOCKER_LIST,
    "application/json",
    "",
    NULL,
    "application/vnd.docker.distribution.manifest.v1+prettyjws"};

static void check_descriptor(const sw_descriptor *d)
{
    if (!d || !sw_ref_digest_valid(d->digest) || d->size < 0)
        abort();
}

static void exercise_manifest(const sw_manifest *m)
{
    if (sw_manifest_get_kind(m) == SW_MANIFEST_IMAGE) {
        check_descriptor(sw_manifest_config(m));
        if (sw_manifest_layer_count(m) > SW_MANIFEST_MAX_ENTRIES)
            abort();
        for (size_t i = 0; i < sw_manifest_layer_count(m); i++)
            check_descriptor(sw_manifest_layer(m, i));
    } else {
        if (sw_manifest_config(m) || sw_manifest_entry_count(m) > SW_MANIFEST_MAX_ENTRIES)
            abort();
        for (size_t i = 0; i < sw_manifest_entry_count(m); i++)
            check_descriptor(sw_manifest_entry(m, i));
        (void)sw_manifest_find_platform(m, "linux", "amd64", "");
    }
    (void)strlen(sw_manifest_media_type(m));
}

static void exercise_config(const sw_image_config *c)
{
    sw_strv lists[] = {sw_image_config_env(c),         sw_image_config_entrypoint(c),
                       sw_image_config_cmd(c),         sw_image_config_exposed_ports(c),
                       sw_image_config_diff_ids(c),    sw_image_config_label_keys(c),
                       sw_image_config_label_values(c)};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        for (size_t j = 0; j < lists[i].n; j++)
            (void)strlen(lists[i].v[j]);
    const char *s = sw_image_config_str(c, "config.User");
    if (s)
        (void)strlen(s);
}

static void exercise_creds(const char *body, size_t len)
{
    sw_creds *c;
    const char *u, *p;
    sw_creds_new(&c);
    (void)sw_creds_add_secret(c, SW_CREDS_TYPE_DOCKERCONFIGJSON, body, len);
    (void)sw_creds_add_secret(c, SW_CREDS_TYPE_DOCKERCFG, body, len);
    if (sw_creds_lookup_repo(c, "docker.io", "library/ruby", &u, &p) && (!u || !p))
        abort();
    (void)sw_creds_lookup(c, "a.example.com", &u, &p);
    sw_creds_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *ct = content_types[data[0] % (sizeof(content_types) / sizeof(content_types[0]))];
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    sw_manifest *m = NULL;
    if (sw_manifest_parse(ct, body, len, &m) == 0) {
        exercise_manifest(m);
        sw_manifest_free(m);
    }
    sw_image_config *c = NULL;
    if (sw_image_config_parse(body, len, &c) == 0) {
        exercise_config(c);
        sw_image_config_free(c);
    }
    exercise_creds(body, len);
    return 0;
}
