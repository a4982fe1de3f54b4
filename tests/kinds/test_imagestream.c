/* Unit tests for the ImageStream strategy: OpenShift's spec-tag generation rules
 * (openshift-api.md §1.3), reference tags, AddTagEventToImageStream, validation, decoration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kinds/imagestream.h"
#include "util/error.h"
#include "util/json.h"

#include <string.h>

static const sw_kind_ctx ctx = {.image_registry = "registry.local:5000"};

static json_t *load(const char *text)
{
    json_t *j = NULL;
    assert_int_equal(sw_json_parse(text, strlen(text), 64, 0, &j), 0);
    return j;
}

/* The "generation" of a spec tag or a tag event; -1 when it has none. */
static int64_t gen_of(const json_t *obj)
{
    int64_t g = -1;
    sw_json_int_at(obj, "generation", &g);
    return g;
}

static int64_t tag_gen(const json_t *is, const char *tag)
{
    return gen_of(sw_imagestream_spec_tag(is, tag));
}

#define STREAM                                                                                     \
    "{\"metadata\":{\"name\":\"ruby\",\"namespace\":\"ns\",\"generation\":1},\"spec\":{\"tags\":[" \
    "{\"name\":\"2.7\",\"from\":{\"kind\":\"DockerImage\",\"name\":\"ruby:2.7\"}},"                \
    "{\"name\":\"old\",\"from\":{\"kind\":\"DockerImage\",\"name\":\"ruby:2.5\"},"                 \
    "\"reference\":true}]}}"

static void test_create_sets_generation_one(void **state)
{
    json_t *is = load(STREAM);
    assert_int_equal(sw_kind_imagestream.prepare_create(&ctx, is), 0);
    assert_int_equal(tag_gen(is, "2.7"), 1);
    assert_int_equal(tag_gen(is, "old"), 1);
    assert_string_equal(sw_json_str_at(sw_imagestream_spec_tag(is, "2.7"), "referencePolicy.type"),
                        "Source");
    /* A DockerImage reference tag gets its status event at once, without an image. */
    json_t *st = sw_imagestream_status_tag(is, "old");
    assert_non_null(st);
    json_t *head = json_array_get(json_object_get(st, "items"), 0);
    assert_string_equal(sw_json_str_at(head, "dockerImageReference"), "ruby:2.5");
    assert_string_equal(sw_json_str_at(head, "image"), "");
    assert_null(sw_imagestream_status_tag(is, "2.7"));
    json_decref(is);
}

static json_t *updated(const json_t *old, void (*edit)(json_t *))
{
    json_t *is = json_deep_copy(old);
    edit(is);
    assert_int_equal(sw_kind_imagestream.prepare_update(&ctx, is, old), 0);
    return is;
}

static void edit_user_generation(json_t *is)
{
    json_object_set_new(sw_imagestream_spec_tag(is, "2.7"), "generation", json_integer(42));
}

static void edit_from(json_t *is)
{
    sw_json_set_path(sw_imagestream_spec_tag(is, "2.7"), "from.name", json_string("ruby:2.7.8"));
}

static void edit_scheduled(json_t *is)
{
    sw_json_set_path(sw_imagestream_spec_tag(is, "2.7"), "importPolicy.scheduled", json_true());
}

static void edit_reset(json_t *is)
{
    json_object_set_new(sw_imagestream_spec_tag(is, "old"), "generation", json_integer(0));
}

static void edit_add_tag(json_t *is)
{
    json_array_append_new(sw_json_at(is, "spec.tags"),
                          json_pack("{s:s, s:{s:s, s:s}}", "name", "3.0", "from", "kind",
                                    "DockerImage", "name", "ruby:3.0"));
}

static void test_update_rules(void **state)
{
    json_t *old = load(STREAM);
    sw_kind_imagestream.prepare_create(&ctx, old);

    /* A user-set non-zero generation is replaced by the stored one: nothing changed. */
    json_t *a = updated(old, edit_user_generation);
    assert_int_equal(tag_gen(a, "2.7"), 1);
    assert_true(json_equal(sw_json_at(a, "spec"), sw_json_at(old, "spec")));

    /* Changing from.name bumps that tag to the new stream generation only. */
    json_t *b = updated(old, edit_from);
    assert_int_equal(tag_gen(b, "2.7"), 2);
    assert_int_equal(tag_gen(b, "old"), 1);

    /* Toggling scheduled does not bump the tag generation. */
    json_t *c = updated(old, edit_scheduled);
    assert_int_equal(tag_gen(c, "2.7"), 1);

    /* generation 0 requests a re-import: it becomes the new stream generation. */
    json_t *d = updated(old, edit_reset);
    assert_int_equal(tag_gen(d, "old"), 2);
    assert_int_equal(tag_gen(d, "2.7"), 1);

    /* A new tag gets the new stream generation. */
    json_t *e = updated(old, edit_add_tag);
    assert_int_equal(tag_gen(e, "3.0"), 2);
    assert_int_equal(tag_gen(e, "2.7"), 1);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    json_decref(e);
    json_decref(old);
}

static void test_add_tag_event(void **state)
{
    json_t *is = load("{\"metadata\":{\"name\":\"s\"}}");
    json_t *ev1 = json_pack("{s:s, s:s, s:I}", "dockerImageReference", "r@sha256:a", "image",
                            "sha256:a", "generation", (json_int_t)1);
    assert_true(sw_imagestream_add_tag_event(is, "t", ev1));
    /* Identical event: no change. */
    assert_false(sw_imagestream_add_tag_event(is, "t", ev1));
    /* Same ref and image, new generation: only the generation changes, no new item. */
    json_t *ev2 = json_pack("{s:s, s:s, s:I}", "dockerImageReference", "r@sha256:a", "image",
                            "sha256:a", "generation", (json_int_t)2);
    assert_true(sw_imagestream_add_tag_event(is, "t", ev2));
    json_t *items = json_object_get(sw_imagestream_status_tag(is, "t"), "items");
    assert_int_equal(json_array_size(items), 1);
    /* Both differ: a new event is prepended (history newest first). */
    json_t *ev3 = json_pack("{s:s, s:s, s:I}", "dockerImageReference", "r@sha256:b", "image",
                            "sha256:b", "generation", (json_int_t)3);
    assert_true(sw_imagestream_add_tag_event(is, "t", ev3));
    assert_int_equal(json_array_size(items), 2);
    assert_string_equal(sw_json_str_at(json_array_get(items, 0), "image"), "sha256:b");
    /* Same image, another pull spec: updated in place, keeping when it was first seen. */
    json_object_set_new(json_array_get(items, 0), "created", json_string("2026-01-01T00:00:00Z"));
    json_t *ev4 = json_pack("{s:s, s:s, s:s}", "dockerImageReference", "mirror@sha256:b", "image",
                            "sha256:b", "created", "2026-06-01T00:00:00Z");
    assert_true(sw_imagestream_add_tag_event(is, "t", ev4));
    assert_int_equal(json_array_size(items), 2);
    assert_string_equal(sw_json_str_at(json_array_get(items, 0), "dockerImageReference"),
                        "mirror@sha256:b");
    assert_string_equal(sw_json_str_at(json_array_get(items, 0), "created"),
                        "2026-01-01T00:00:00Z");
    json_decref(ev1);
    json_decref(ev2);
    json_decref(ev3);
    json_decref(ev4);
    json_decref(is);
}

static void test_same_stream_reference_copies_event(void **state)
{
    json_t *old = load(STREAM);
    sw_kind_imagestream.prepare_create(&ctx, old);
    json_t *ev = json_pack("{s:s, s:s, s:I}", "dockerImageReference", "r@sha256:c", "image",
                           "sha256:c", "generation", (json_int_t)1);
    sw_imagestream_add_tag_event(old, "2.7", ev);
    json_t *is = json_deep_copy(old);
    json_array_append_new(sw_json_at(is, "spec.tags"),
                          json_pack("{s:s, s:{s:s, s:s}}", "name", "latest", "from", "kind",
                                    "ImageStreamTag", "name", "ruby:2.7"));
    assert_int_equal(sw_kind_imagestream.prepare_update(&ctx, is, old), 0);
    json_t *head =
        json_array_get(json_object_get(sw_imagestream_status_tag(is, "latest"), "items"), 0);
    assert_non_null(head);
    assert_string_equal(sw_json_str_at(head, "image"), "sha256:c");
    json_decref(ev);
    json_decref(is);
    json_decref(old);
}

static const json_t *head_of(const json_t *is, const char *tag)
{
    return json_array_get(json_object_get(sw_imagestream_status_tag(is, tag), "items"), 0);
}

static int64_t head_gen(const json_t *is, const char *tag)
{
    return gen_of(head_of(is, tag));
}

#define TRACKING                                                                                   \
    "{\"metadata\":{\"name\":\"app\",\"namespace\":\"ns\",\"generation\":1},\"spec\":{\"tags\":["  \
    "{\"name\":\"latest\",\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"2.7\"}},"               \
    "{\"name\":\"2.7\",\"from\":{\"kind\":\"DockerImage\",\"name\":\"q.io/r:2.7\"},"               \
    "\"reference\":true}]}}"

static void annotate(json_t *is)
{
    sw_json_set_path(is, "metadata.annotations.note", json_string("hello"));
}

/* A write that does not move a tag (an annotation) leaves the tags that follow others alone
 * (jansson's json_equal(NULL, NULL) is false: a tag without "reference" looked changed and was
 * copied again over what had been pushed to it). */
static void test_unchanged_reference_not_recopied(void **state)
{
    json_t *old = load(STREAM);
    sw_kind_imagestream.prepare_create(&ctx, old);
    json_array_append_new(sw_json_at(old, "spec.tags"),
                          json_pack("{s:s, s:{s:s, s:s}, s:I}", "name", "latest", "from", "kind",
                                    "ImageStreamTag", "name", "2.7", "generation", (json_int_t)1));
    json_t *d1 = json_pack("{s:s, s:s, s:I}", "dockerImageReference", "r@sha256:d1", "image",
                           "sha256:d1", "generation", (json_int_t)1);
    json_t *d2 = json_pack("{s:s, s:s, s:I}", "dockerImageReference", "r@sha256:d2", "image",
                           "sha256:d2", "generation", (json_int_t)1);
    sw_imagestream_add_tag_event(old, "2.7", d1);
    sw_imagestream_add_tag_event(old, "latest", d1);
    sw_imagestream_add_tag_event(old, "latest", d2); /* pushed straight to latest */
    json_t *is = updated(old, annotate);
    assert_string_equal(sw_json_str_at(head_of(is, "latest"), "image"), "sha256:d2");
    assert_int_equal(
        json_array_size(json_object_get(sw_imagestream_status_tag(is, "latest"), "items")), 2);
    json_decref(d1);
    json_decref(d2);
    json_decref(is);
    json_decref(old);
}

/* A tag that gets a new event in the same write passes it on to the tags following it, whatever
 * their order in spec.tags (updateChangedTrackingTags); the copy has the follower's generation. */
static void test_tracking_follows_in_any_order(void **state)
{
    json_t *is = load(TRACKING);
    assert_int_equal(sw_kind_imagestream.prepare_create(&ctx, is), 0);
    assert_string_equal(sw_json_str_at(head_of(is, "latest"), "dockerImageReference"),
                        "q.io/r:2.7");
    json_t *old = is;
    is = json_deep_copy(old);
    json_t *t27 = sw_imagestream_spec_tag(is, "2.7");
    sw_json_set_path(t27, "from.name", json_string("q.io/r:2.8"));
    assert_int_equal(sw_kind_imagestream.prepare_update(&ctx, is, old), 0);
    assert_string_equal(sw_json_str_at(head_of(is, "2.7"), "dockerImageReference"), "q.io/r:2.8");
    assert_string_equal(sw_json_str_at(head_of(is, "latest"), "dockerImageReference"),
                        "q.io/r:2.8");
    json_decref(old);
    old = is;
    sw_json_set_path(old, "metadata.generation", json_integer(2)); /* as the REST layer stores */
    is = json_deep_copy(old);
    json_array_append_new(sw_json_at(is, "spec.tags"),
                          json_pack("{s:s, s:{s:s, s:s}}", "name", "new", "from", "kind",
                                    "ImageStreamTag", "name", "2.7"));
    assert_int_equal(sw_kind_imagestream.prepare_update(&ctx, is, old), 0);
    assert_int_equal(tag_gen(is, "new"), 3);
    assert_int_equal(head_gen(is, "new"), 3); /* not 2.7's 2: no import looks pending */
    json_decref(old);
    json_decref(is);
}

/* An ImageStreamImage reference in spec must name exactly one image of the stream (OpenShift's
 * ResolveImageID): none, or a prefix that several images share, refuse the write. */
static void test_stream_image_reference_resolves_one(void **state)
{
    json_t *old = load(STREAM);
    sw_kind_imagestream.prepare_create(&ctx, old);
    const char *d1 = "sha256:11aa000000000000000000000000000000000000000000000000000000000000";
    const char *d2 = "sha256:11bb000000000000000000000000000000000000000000000000000000000000";
    json_t *e1 = json_pack("{s:s, s:s}", "dockerImageReference", "r@x", "image", d1);
    json_t *e2 = json_pack("{s:s, s:s}", "dockerImageReference", "r@y", "image", d2);
    sw_imagestream_add_tag_event(old, "2.7", e1);
    sw_imagestream_add_tag_event(old, "2.7", e2);
    const char *cases[][2] = {{"ruby@sha256:11", "multiple images"},
                              {"ruby@sha256:ff", "no image of the stream"},
                              {"ruby@sha256:11a", NULL}};
    for (size_t i = 0; i < 3; i++) {
        json_t *is = json_deep_copy(old);
        json_array_append_new(sw_json_at(is, "spec.tags"),
                              json_pack("{s:s, s:{s:s, s:s}}", "name", "pin", "from", "kind",
                                        "ImageStreamImage", "name", cases[i][0]));
        int error = sw_kind_imagestream.prepare_update(&ctx, is, old);
        if (cases[i][1]) {
            assert_int_equal(error, SW_EINVALID);
            assert_non_null(strstr(sw_error_msg(), cases[i][1]));
        } else {
            assert_int_equal(error, 0);
            assert_string_equal(sw_json_str_at(head_of(is, "pin"), "image"), d1);
        }
        json_decref(is);
    }
    json_decref(e1);
    json_decref(e2);
    json_decref(old);
}

static void test_status_update_fills_generation(void **state)
{
    /* publicDockerImageRepository is computed by OpenShift, never taken from a client */
    json_t *pub = load("{\"metadata\":{\"name\":\"s\",\"generation\":1},"
                       "\"status\":{\"publicDockerImageRepository\":\"z\"}}");
    assert_int_equal(sw_kind_imagestream.prepare_status_update(&ctx, pub, pub), 0);
    assert_null(sw_json_at(pub, "status.publicDockerImageRepository"));
    json_decref(pub);
    json_t *is = load(STREAM);
    sw_kind_imagestream.prepare_create(&ctx, is);
    json_t *ev = json_pack("{s:s, s:s}", "dockerImageReference", "r@sha256:d", "image", "sha256:d");
    sw_imagestream_add_tag_event(is, "2.7", ev);
    assert_int_equal(sw_kind_imagestream.prepare_status_update(&ctx, is, is), 0);
    int64_t g = 0;
    json_t *head =
        json_array_get(json_object_get(sw_imagestream_status_tag(is, "2.7"), "items"), 0);
    assert_true(sw_json_int_at(head, "generation", &g));
    assert_int_equal(g, 1);
    json_decref(ev);
    json_decref(is);
}

static void test_validation(void **state)
{
    json_t *bad_kind = load("{\"metadata\":{\"name\":\"s\",\"namespace\":\"n\"},\"spec\":{\"tags\":"
                            "[{\"name\":\"t\",\"from\":{\"kind\":\"Pod\",\"name\":\"x\"}}]}}");
    assert_int_equal(sw_kind_imagestream.validate(&ctx, bad_kind, NULL), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "from.kind"));
    json_t *sched = load("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"tags\":[{\"name\":\"t\","
                         "\"from\":{\"kind\":\"ImageStreamTag\",\"name\":\"x\"},"
                         "\"importPolicy\":{\"scheduled\":true}}]}}");
    assert_int_equal(sw_kind_imagestream.validate(&ctx, sched, NULL), SW_EINVALID);
    json_t *dup = load("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"tags\":[{\"name\":\"t\"},"
                       "{\"name\":\"t\"}]}}");
    assert_int_equal(sw_kind_imagestream.validate(&ctx, dup, NULL), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "Duplicate"));
    json_t *repo = load("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"dockerImageRepository\":"
                        "\"quay.io/a/b:tag\"}}");
    assert_int_equal(sw_kind_imagestream.validate(&ctx, repo, NULL), SW_EINVALID);
    /* references must parse as image references (§1.1) */
    json_t *badref = load("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"tags\":[{\"name\":\"t\","
                          "\"from\":{\"kind\":\"DockerImage\",\"name\":\"not a ref!!\"}}]}}");
    assert_int_equal(sw_kind_imagestream.validate(&ctx, badref, NULL), SW_EINVALID);
    assert_non_null(strstr(sw_error_msg(), "spec.tags[t].from.name"));
    json_t *badrepo = load("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"dockerImageRepository\":"
                           "\"Not A Repo!!\"}}");
    assert_int_equal(sw_kind_imagestream.validate(&ctx, badrepo, NULL), SW_EINVALID);
    json_t *ok = load(STREAM);
    assert_int_equal(sw_kind_imagestream.validate(&ctx, ok, NULL), 0);
    json_decref(badref);
    json_decref(badrepo);
    json_decref(bad_kind);
    json_decref(sched);
    json_decref(dup);
    json_decref(repo);
    json_decref(ok);
}

static void test_repository_computed_on_read(void **state)
{
    char out[256];
    assert_true(sw_kind_imagestream.computed_status(&ctx, "ns", "ruby", out, sizeof(out)));
    assert_string_equal(out, "registry.local:5000/ns/ruby");
    assert_string_equal(sw_kind_imagestream.computed_status_key, "dockerImageRepository");
    sw_kind_ctx none = {.image_registry = ""};
    assert_false(sw_kind_imagestream.computed_status(&none, "ns", "ruby", out, sizeof(out)));
    /* Without a registry the fallback, spec.dockerImageRepository, is stored as status's
     * first key; a client-written value is never kept. */
    json_t *is = load("{\"metadata\":{\"name\":\"s\",\"namespace\":\"n\"},\"spec\":{"
                      "\"dockerImageRepository\":\"quay.io/a/b\"},\"status\":{\"tags\":[],"
                      "\"dockerImageRepository\":\"forged\"}}");
    assert_int_equal(sw_kind_imagestream.prepare_status_update(&none, is, is), 0);
    const char *first = json_object_iter_key(json_object_iter(json_object_get(is, "status")));
    assert_string_equal(first, "dockerImageRepository");
    assert_string_equal(sw_json_str_at(is, "status.dockerImageRepository"), "quay.io/a/b");
    json_decref(is);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_sets_generation_one),
        cmocka_unit_test(test_update_rules),
        cmocka_unit_test(test_add_tag_event),
        cmocka_unit_test(test_same_stream_reference_copies_event),
        cmocka_unit_test(test_unchanged_reference_not_recopied),
        cmocka_unit_test(test_tracking_follows_in_any_order),
        cmocka_unit_test(test_stream_image_reference_resolves_one),
        cmocka_unit_test(test_status_update_fills_generation),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_repository_computed_on_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
