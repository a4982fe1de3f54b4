/* Unit tests for the DeploymentConfig rules (etcd-triggers.md §7) its controller and its
 * instantiate subresource share: resolving ImageChange triggers by digest (automatic only,
 * manual too when asked; nothing while one is unresolved), the causes of a new version (the
 * first waits for every automatic trigger; ImageChange before ConfigChange; a template that
 * differs from the one the latest ReplicationController was made from), and the bump. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kinds/deploymentconfig.h"
#include "util/error.h"
#include "util/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

/* A config with an automatic ImageChange trigger on web:latest for container app (and a
 * ConfigChange trigger when config is set). */
static json_t *config(bool config, bool automatic)
{
    json_t *dc = json_pack(
        "{s:s, s:{s:s, s:s}, s:{s:[{s:s, s:{s:b, s:[s], s:{s:s, s:s}}}], s:{s:{s:[{s:s, s:s}, "
        "{s:s, s:s}]}}}, s:{s:i}}",
        "kind", "DeploymentConfig", "metadata", "name", "web", "namespace", "team", "spec",
        "triggers", "type", "ImageChange", "imageChangeParams", "automatic", automatic,
        "containerNames", "app", "from", "kind", "ImageStreamTag", "name", "web:latest", "template",
        "spec", "containers", "name", "app", "image", "", "name", "side", "image", "busybox",
        "status", "latestVersion", 0);
    if (config)
        json_array_append_new(sw_json_at(dc, "spec.triggers"),
                              json_pack("{s:s}", "type", "ConfigChange"));
    return dc;
}

/* The stream the resolver sees: web with tag latest at registry/team/web@digest (NULL: no
 * image yet). */
static const char *stream_digest;
static int calls;

static int fake_stream(void *ctx, const char *ns, const char *name, json_t **out)
{
    calls++;
    if (strcmp(ns, "team") || strcmp(name, "web"))
        return SW_ENOTFOUND;
    char ref[200];
    snprintf(ref, sizeof(ref), "%s/team/web@%s", (const char *)ctx,
             stream_digest ? stream_digest : "");
    *out = json_pack("{s:{s:s}, s:{s:[{s:s, s:[{s:s, s:s}]}]}}", "metadata", "name", "web",
                     "status", "tags", "tag", "latest", "items", "dockerImageReference", ref,
                     "image", stream_digest ? stream_digest : "");
    if (!stream_digest)
        json_array_clear(sw_json_at(json_array_get(sw_json_at(*out, "status.tags"), 0), "items"));
    return 0;
}

static const char *image_of(const json_t *dc, size_t i)
{
    return sw_json_str_at(json_array_get(sw_json_at(dc, "spec.template.spec.containers"), i),
                          "image");
}

static const char *last_of(const json_t *dc)
{
    return sw_json_str_at(json_array_get(sw_json_at(dc, "spec.triggers"), 0),
                          "imageChangeParams.lastTriggeredImage");
}

static void resolve_by_digest(void **state)
{
    (void)state;
    json_t *dc = config(true, true);
    bool changed, unresolved;
    stream_digest = NULL;
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved), 0);
    assert_false(changed);
    assert_true(unresolved);
    assert_string_equal(image_of(dc, 0), "");

    stream_digest = D1;
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved), 0);
    assert_true(changed);
    assert_false(unresolved);
    assert_string_equal(image_of(dc, 0), "reg:5000/team/web@" D1);
    assert_string_equal(last_of(dc), "reg:5000/team/web@" D1);
    assert_string_equal(image_of(dc, 1), "busybox"); /* a container it does not name */

    /* the same digest under another registry name: nothing changes */
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "alias:5000", &changed, &unresolved), 0);
    assert_false(changed);
    assert_string_equal(image_of(dc, 0), "reg:5000/team/web@" D1);

    /* a new digest: both change */
    stream_digest = D2;
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved), 0);
    assert_true(changed);
    assert_string_equal(last_of(dc), "reg:5000/team/web@" D2);

    /* a tag that lost its image keeps what was triggered: not unresolved */
    stream_digest = NULL;
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved), 0);
    assert_false(changed);
    assert_false(unresolved);
    json_decref(dc);

    /* manual triggers resolve only when asked */
    dc = config(true, false);
    stream_digest = D1;
    calls = 0;
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved), 0);
    assert_false(changed);
    assert_int_equal(calls, 0);
    assert_int_equal(sw_dc_resolve(dc, true, fake_stream, "reg:5000", &changed, &unresolved), 0);
    assert_true(changed);
    assert_string_equal(image_of(dc, 0), "reg:5000/team/web@" D1);
    json_decref(dc);

    /* a named container that is gone */
    dc = config(false, true);
    json_array_remove(sw_json_at(dc, "spec.template.spec.containers"), 0);
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved),
                     SW_EINVALID);
    json_decref(dc);
}

static json_t *rc_of(const json_t *dc)
{
    char *text = json_dumps(dc, JSON_COMPACT);
    json_t *rc = json_pack("{s:{s:{s:s}}, s:{s:O}}", "metadata", "annotations", SW_DC_ENCODED_ANN,
                           text, "spec", "template", sw_json_at(dc, "spec.template"));
    free(text);
    return rc;
}

static const char *first_cause(json_t *causes)
{
    static char type[64];
    snprintf(type, sizeof(type), "%s", sw_json_str_at(json_array_get(causes, 0), "type") ?: "");
    json_decref(causes);
    return type;
}

static void causes(void **state)
{
    (void)state;
    json_t *dc = config(true, true);
    /* version 0 waits for the automatic trigger */
    assert_string_equal(first_cause(sw_dc_causes(dc, NULL, false)), "");
    assert_string_equal(first_cause(sw_dc_causes(dc, NULL, true)), "Manual");
    bool changed, unresolved;
    stream_digest = D1;
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved), 0);
    /* then its first version is a config change (with the ConfigChange trigger) */
    assert_string_equal(first_cause(sw_dc_causes(dc, NULL, false)), "ConfigChange");
    sw_dc_bump(dc, sw_dc_causes(dc, NULL, false));
    assert_int_equal(sw_json_int_or(dc, "status.latestVersion", 0), 1);
    assert_string_equal(sw_json_str_at(dc, "status.details.message"), "config change");
    /* version 1 without its RC yet: nothing (the controller makes it first) */
    assert_string_equal(first_cause(sw_dc_causes(dc, NULL, false)), "");
    json_t *rc = rc_of(dc);
    assert_string_equal(first_cause(sw_dc_causes(dc, rc, false)), "");
    /* the same digest under another name is not a new image */
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "alias:5000", &changed, &unresolved), 0);
    assert_string_equal(first_cause(sw_dc_causes(dc, rc, false)), "");
    /* a new image: ImageChange, naming it */
    stream_digest = D2;
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved), 0);
    json_t *c = sw_dc_causes(dc, rc, false);
    assert_string_equal(sw_json_str_at(json_array_get(c, 0), "imageTrigger.from.name"),
                        "reg:5000/team/web@" D2);
    assert_string_equal(sw_json_str_at(json_array_get(c, 0), "imageTrigger.from.kind"),
                        "DockerImage");
    assert_int_equal(json_array_size(c), 1);
    sw_dc_bump(dc, c);
    assert_string_equal(sw_json_str_at(dc, "status.details.message"), "image change");
    json_decref(rc);
    rc = rc_of(dc);
    assert_string_equal(first_cause(sw_dc_causes(dc, rc, false)), "");
    /* a template change with a ConfigChange trigger */
    json_object_set_new(sw_json_obj_path(dc, "spec.template.metadata"), "labels",
                        json_pack("{s:s}", "tier", "web"));
    assert_string_equal(first_cause(sw_dc_causes(dc, rc, false)), "ConfigChange");
    json_decref(rc);
    json_decref(dc);

    /* without a ConfigChange trigger: the first version is an image change, and a template
     * change alone makes none */
    dc = config(false, true);
    assert_int_equal(sw_dc_resolve(dc, false, fake_stream, "reg:5000", &changed, &unresolved), 0);
    assert_string_equal(first_cause(sw_dc_causes(dc, NULL, false)), "ImageChange");
    sw_dc_bump(dc, sw_dc_causes(dc, NULL, false));
    rc = rc_of(dc);
    json_object_set_new(sw_json_obj_path(dc, "spec.template.metadata"), "labels",
                        json_pack("{s:s}", "tier", "web"));
    assert_string_equal(first_cause(sw_dc_causes(dc, rc, false)), "");
    json_decref(rc);
    json_decref(dc);

    /* no triggers at all: only a forced instantiate */
    dc = config(false, true);
    json_array_clear(sw_json_at(dc, "spec.triggers"));
    assert_string_equal(first_cause(sw_dc_causes(dc, NULL, false)), "");
    json_decref(dc);
}

static void rc_names(void **state)
{
    (void)state;
    char name[256];
    sw_dc_rc_name("web", 12, name, sizeof(name));
    assert_string_equal(name, "web-12");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resolve_by_digest),
        cmocka_unit_test(causes),
        cmocka_unit_test(rc_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
