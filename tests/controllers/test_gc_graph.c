/* Unit tests for src/controllers/gc_graph, the garbage collector's owner graph: what each event
 * asks the collector to look at, and the view it decides on. Owner graphs: chains, several
 * owners, cross-kind, cluster-scoped owners, cycles, an owner re-created under its name with a
 * new uid, owners never seen, foreground and orphaning owners, re-lists that drop objects, and
 * that nodes go once nothing names them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "controllers/gc_graph.h"
#include "util/error.h"
#include "util/json.h"

#include <stdio.h>
#include <string.h>

typedef struct fixture {
    sw_gc_graph *g;
    json_t *queued; /* "d:<uid>" / "o:<uid>" -> true */
    int cm, is, ns; /* kind ids */
} fixture;

static void hook(fixture *f, const char *prefix, const char *uid)
{
    char key[128];
    snprintf(key, sizeof(key), "%s:%s", prefix, uid);
    json_object_set_new(f->queued, key, json_true());
}

static void on_delete(void *ctx, const char *uid)
{
    hook(ctx, "d", uid);
}

static void on_orphan(void *ctx, const char *uid)
{
    hook(ctx, "o", uid);
}

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof(f));
    sw_gc_graph_hooks h = {on_delete, on_orphan, &f};
    f.g = sw_gc_graph_new(&h);
    f.queued = json_object();
    f.cm = sw_gc_graph_kind(f.g, "", "ConfigMap");
    f.is = sw_gc_graph_kind(f.g, "image.openshift.io", "ImageStream");
    f.ns = sw_gc_graph_kind(f.g, "", "Namespace");
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sw_gc_graph_free(f->g);
    json_decref(f->queued);
    return 0;
}

static bool queued(fixture *f, const char *key)
{
    return json_object_get(f->queued, key) != NULL;
}

static void clear(fixture *f)
{
    json_object_clear(f->queued);
}

/* An object: name, ns ("" cluster-scoped), uid, rv, owner references as "uid|Kind|name" or
 * "uid|group/Kind|name", with "|block" for blockOwnerDeletion (NULL-terminated),
 * finalizers (NULL-terminated) and whether it is being deleted. */
static json_t *obj(const char *name, const char *ns, const char *uid, const char *rv,
                   const char *const *owners, const char *const *finalizers, bool deleting)
{
    json_t *meta = json_pack("{s:s, s:s, s:s}", "name", name, "uid", uid, "resourceVersion", rv);
    if (*ns)
        json_object_set_new(meta, "namespace", json_string(ns));
    json_t *refs = json_array();
    for (size_t i = 0; owners && owners[i]; i++) {
        char buf[256], *parts[4] = {0};
        snprintf(buf, sizeof(buf), "%s", owners[i]);
        size_t n = 0;
        for (char *p = buf; p && n < 4; n++) {
            parts[n] = p;
            p = strchr(p, '|');
            if (p)
                *p++ = '\0';
        }
        char api[128] = "v1";
        const char *slash = strrchr(parts[1], '/');
        if (slash)
            snprintf(api, sizeof(api), "%.*s/v1", (int)(slash - parts[1]), parts[1]);
        json_array_append_new(refs,
                              json_pack("{s:s, s:s, s:s, s:s, s:b}", "uid", parts[0], "apiVersion",
                                        api, "kind", slash ? slash + 1 : parts[1], "name", parts[2],
                                        "blockOwnerDeletion", parts[3] != NULL));
    }
    if (json_array_size(refs))
        json_object_set(meta, "ownerReferences", refs);
    json_decref(refs);
    json_t *fin = json_array();
    for (size_t i = 0; finalizers && finalizers[i]; i++)
        json_array_append_new(fin, json_string(finalizers[i]));
    if (json_array_size(fin))
        json_object_set(meta, "finalizers", fin);
    json_decref(fin);
    if (deleting)
        json_object_set_new(meta, "deletionTimestamp", json_string("2026-12-01T00:00:00Z"));
    return json_pack("{s:o}", "metadata", meta);
}

static void upsert(fixture *f, int kind, json_t *o)
{
    sw_gc_graph_upsert(f->g, kind, o);
    json_decref(o);
}

static int owner_state(fixture *f, const char *uid, size_t i)
{
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, uid, &it), 0);
    assert_true(i < it.nowners);
    int s = it.owners[i].state;
    sw_gc_item_dispose(&it);
    return s;
}

static void test_chain(void **state)
{
    fixture *f = *state;
    const char *b_owner[] = {"ua|ConfigMap|a", NULL}, *c_owner[] = {"ub|ConfigMap|b", NULL};
    upsert(f, f->cm, obj("a", "n", "ua", "1", NULL, NULL, false));
    upsert(f, f->cm, obj("b", "n", "ub", "2", b_owner, NULL, false));
    upsert(f, f->cm, obj("c", "n", "uc", "3", c_owner, NULL, false));
    assert_int_equal(json_object_size(f->queued), 0); /* every owner present: nothing to do */
    assert_int_equal(owner_state(f, "uc", 0), SW_GC_OWNER_PRESENT);
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, "ub", &it), 0);
    assert_int_equal(it.ndependents, 1);
    assert_string_equal(it.dependents[0], "uc");
    assert_int_equal(it.rv, 2);
    assert_string_equal(it.ns, "n");
    sw_gc_item_dispose(&it);

    sw_gc_graph_remove(f->g, "ua");
    /* the owner that went is looked at (one live read), not each of its dependents */
    assert_true(queued(f, "d:ua"));
    assert_false(queued(f, "d:ub"));
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_UNKNOWN); /* must be read live */
    clear(f);
    sw_gc_graph_mark_absent(f->g, "ua", NULL);
    assert_true(queued(f, "d:ub")); /* proved gone: now its dependents */
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_ABSENT); /* no second read */
    clear(f);
    sw_gc_graph_mark_absent(f->g, "ua", NULL);
    assert_int_equal(json_object_size(f->queued), 0); /* once */
    sw_gc_graph_remove(f->g, "ub");
    assert_true(queued(f, "d:ub"));              /* the cascade goes on through ub */
    assert_int_equal(sw_gc_graph_size(f->g), 2); /* ub (virtual, named by uc) and uc */
    sw_gc_graph_remove(f->g, "uc");
    assert_int_equal(sw_gc_graph_size(f->g), 0); /* nothing names anything */
}

static void test_several_owners_cross_kind(void **state)
{
    fixture *f = *state;
    const char *owners[] = {"u1|ConfigMap|a1", "u2|image.openshift.io/ImageStream|is", NULL};
    upsert(f, f->cm, obj("a1", "n", "u1", "1", NULL, NULL, false));
    upsert(f, f->is, obj("is", "n", "u2", "2", NULL, NULL, false));
    upsert(f, f->cm, obj("b", "n", "ub", "3", owners, NULL, false));
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, "ub", &it), 0);
    assert_int_equal(it.nowners, 2);
    assert_int_equal(it.owners[0].kind, f->cm);
    assert_int_equal(it.owners[1].kind, f->is);
    assert_string_equal(it.owners[1].name, "is");
    sw_gc_item_dispose(&it);
    const char *g, *k;
    sw_gc_graph_kind_name(f->g, f->is, &g, &k);
    assert_string_equal(g, "image.openshift.io");
    assert_string_equal(k, "ImageStream");
    sw_gc_graph_remove(f->g, "u1");
    assert_true(queued(f, "d:u1"));
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_UNKNOWN);
    /* the dependent that proves the owner gone is not queued again by its own proof */
    clear(f);
    sw_gc_graph_mark_absent(f->g, "u1", "ub");
    assert_int_equal(json_object_size(f->queued), 0);
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_ABSENT);
    assert_int_equal(owner_state(f, "ub", 1), SW_GC_OWNER_PRESENT); /* the other keeps it */
    /* the dependent drops the reference to the owner that went: that node goes too */
    const char *left[] = {"u2|image.openshift.io/ImageStream|is", NULL};
    upsert(f, f->cm, obj("b", "n", "ub", "4", left, NULL, false));
    assert_int_not_equal(sw_gc_graph_item(f->g, "u1", &it), 0);
    sw_gc_item_dispose(&it);
    sw_gc_graph_remove(f->g, "ub");
    sw_gc_graph_remove(f->g, "u2");
    assert_int_equal(sw_gc_graph_size(f->g), 0);
}

static void test_cluster_scoped_owner(void **state)
{
    fixture *f = *state;
    const char *owner[] = {"uns|Namespace|team", NULL};
    upsert(f, f->ns, obj("team", "", "uns", "1", NULL, NULL, false));
    upsert(f, f->cm, obj("b", "other", "ub", "2", owner, NULL, false));
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, "ub", &it), 0);
    assert_string_equal(it.owners[0].ns, ""); /* seen cluster-scoped */
    assert_int_equal(it.owners[0].state, SW_GC_OWNER_PRESENT);
    sw_gc_item_dispose(&it);
    sw_gc_graph_remove(f->g, "ub");
    sw_gc_graph_remove(f->g, "uns");
    assert_int_equal(sw_gc_graph_size(f->g), 0);
}

static void test_cycle(void **state)
{
    fixture *f = *state;
    const char *a_owner[] = {"ub|ConfigMap|b", NULL}, *b_owner[] = {"ua|ConfigMap|a", NULL};
    upsert(f, f->cm, obj("a", "n", "ua", "1", a_owner, NULL, false));
    assert_true(queued(f, "d:ub")); /* b not seen yet: is it there? */
    clear(f);
    upsert(f, f->cm, obj("b", "n", "ub", "2", b_owner, NULL, false));
    assert_int_equal(json_object_size(f->queued), 0);
    assert_int_equal(owner_state(f, "ua", 0), SW_GC_OWNER_PRESENT);
    sw_gc_graph_remove(f->g, "ua");
    assert_true(queued(f, "d:ua"));
    sw_gc_graph_mark_absent(f->g, "ua", NULL);
    assert_true(queued(f, "d:ub"));
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_ABSENT);
    sw_gc_graph_remove(f->g, "ub");
    assert_int_equal(sw_gc_graph_size(f->g), 0);
    /* an object that owns itself */
    const char *self[] = {"us|ConfigMap|s", NULL};
    upsert(f, f->cm, obj("s", "n", "us", "5", self, NULL, false));
    assert_int_equal(owner_state(f, "us", 0), SW_GC_OWNER_PRESENT);
    sw_gc_graph_remove(f->g, "us");
    assert_int_equal(sw_gc_graph_size(f->g), 0);
}

static void test_recreated_owner(void **state)
{
    fixture *f = *state;
    const char *owner[] = {"old|ConfigMap|a", NULL};
    upsert(f, f->cm, obj("a", "n", "old", "1", NULL, NULL, false));
    upsert(f, f->cm, obj("b", "n", "ub", "2", owner, NULL, false));
    sw_gc_graph_remove(f->g, "old");
    upsert(f, f->cm, obj("a", "n", "new", "3", NULL, NULL, false)); /* same name, new uid */
    /* the reference names the old uid: the new object is not its owner */
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_UNKNOWN);
    sw_gc_graph_mark_absent(f->g, "old", NULL);
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_ABSENT);
    /* marking a node the informers hold does nothing: its deletion has to arrive */
    sw_gc_graph_mark_absent(f->g, "new", NULL);
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, "new", &it), 0);
    assert_false(it.virtual_node);
    assert_false(it.absent);
    sw_gc_item_dispose(&it);
    sw_gc_graph_remove(f->g, "ub");
    sw_gc_graph_remove(f->g, "new");
    assert_int_equal(sw_gc_graph_size(f->g), 0);
}

static void test_unseen_owner(void **state)
{
    fixture *f = *state;
    const char *owner[] = {"ghost|example.com/Nope|nope", NULL};
    upsert(f, f->cm, obj("b", "n", "ub", "1", owner, NULL, false));
    assert_true(queued(f, "d:ghost"));
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, "ghost", &it), 0);
    assert_true(it.virtual_node);
    assert_string_equal(it.name, "nope");
    assert_string_equal(it.ns, "n"); /* looked for in its dependent's namespace */
    assert_int_equal(it.ndependents, 1);
    const char *g, *k;
    sw_gc_graph_kind_name(f->g, it.kind, &g, &k);
    assert_string_equal(g, "example.com");
    assert_string_equal(k, "Nope");
    sw_gc_item_dispose(&it);
    /* a second dependent of a known-absent owner is looked at at once */
    sw_gc_graph_mark_absent(f->g, "ghost", NULL);
    assert_true(queued(f, "d:ub"));
    clear(f);
    upsert(f, f->cm, obj("c", "n", "uc", "2", owner, NULL, false));
    assert_true(queued(f, "d:uc"));
    assert_false(queued(f, "d:ghost"));
    sw_gc_graph_remove(f->g, "ub");
    sw_gc_graph_remove(f->g, "uc");
    assert_int_equal(sw_gc_graph_size(f->g), 0);
}

static void test_foreground_and_orphan(void **state)
{
    fixture *f = *state;
    const char *blocking[] = {"ua|ConfigMap|a|block", NULL}, *plain[] = {"ua|ConfigMap|a", NULL};
    const char *fg[] = {"foregroundDeletion", NULL}, *orphan[] = {"orphan", NULL};
    upsert(f, f->cm, obj("a", "n", "ua", "1", NULL, NULL, false));
    upsert(f, f->cm, obj("b", "n", "ub", "2", blocking, NULL, false));
    upsert(f, f->cm, obj("c", "n", "uc", "3", plain, NULL, false));
    upsert(f, f->cm, obj("a", "n", "ua", "4", NULL, fg, true));
    assert_true(queued(f, "d:ua"));
    assert_true(queued(f, "d:ub"));
    assert_true(queued(f, "d:uc"));
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, "ua", &it), 0);
    assert_true(it.deleting_dependents);
    assert_int_equal(it.nblocking, 1); /* only b's reference blocks */
    assert_string_equal(it.blocking[0], "ub");
    assert_int_equal(it.ndependents, 2);
    sw_gc_item_dispose(&it);
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_WAITING);
    clear(f);
    upsert(f, f->cm, obj("a", "n", "ua", "5", NULL, fg, true));
    assert_int_equal(json_object_size(f->queued), 0); /* no transition, nothing new */
    /* b stops blocking: the owner is looked at again */
    upsert(f, f->cm, obj("b", "n", "ub", "6", plain, NULL, false));
    assert_true(queued(f, "d:ua"));
    clear(f);
    sw_gc_graph_remove(f->g, "uc");
    assert_true(queued(f, "d:ua")); /* a dependent of a foreground owner went */
    sw_gc_graph_remove(f->g, "ub");
    sw_gc_graph_remove(f->g, "ua");
    assert_int_equal(sw_gc_graph_size(f->g), 0);

    /* an owner that blocks its own deletion is stuck (as in Kubernetes), but not looked at in
     * a loop: it is not among the blocking dependents to look at */
    const char *self[] = {"us|ConfigMap|s|block", NULL};
    upsert(f, f->cm, obj("s", "n", "us", "9", self, fg, true));
    assert_int_equal(sw_gc_graph_item(f->g, "us", &it), 0);
    assert_int_equal(it.nblocking_all, 1);
    assert_int_equal(it.nblocking, 0);
    sw_gc_item_dispose(&it);
    sw_gc_graph_remove(f->g, "us");

    clear(f);
    upsert(f, f->cm, obj("o", "n", "uo", "7", NULL, orphan, false));
    assert_int_equal(json_object_size(f->queued), 0); /* not being deleted */
    upsert(f, f->cm, obj("o", "n", "uo", "8", NULL, orphan, true));
    assert_true(queued(f, "o:uo"));
    assert_int_equal(sw_gc_graph_item(f->g, "uo", &it), 0);
    assert_true(it.orphan_finalizer && it.deleting && !it.deleting_dependents);
    sw_gc_item_dispose(&it);
    sw_gc_graph_remove(f->g, "uo");
    assert_int_equal(sw_gc_graph_size(f->g), 0);
}

/* What the graph knows of an owner holds only for references with its coordinates: a
 * reference with the right uid but another name or kind must be read live by its own. */
static void test_coordinates(void **state)
{
    fixture *f = *state;
    const char *right[] = {"ua|ConfigMap|a", NULL}, *wrong_name[] = {"ua|ConfigMap|not-a", NULL};
    const char *wrong_kind[] = {"ua|image.openshift.io/ImageStream|a", NULL};
    upsert(f, f->cm, obj("a", "n", "ua", "1", NULL, NULL, false));
    upsert(f, f->cm, obj("good", "n", "ug", "2", right, NULL, false));
    assert_int_equal(json_object_size(f->queued), 0);
    upsert(f, f->cm, obj("bad-name", "n", "ubn", "3", wrong_name, NULL, false));
    assert_true(queued(f, "d:ubn")); /* a seen owner, other coordinates: looked at */
    upsert(f, f->cm, obj("bad-kind", "n", "ubk", "4", wrong_kind, NULL, false));
    assert_true(queued(f, "d:ubk"));
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, "ubn", &it), 0);
    assert_int_equal(it.owners[0].state, SW_GC_OWNER_UNKNOWN);
    assert_false(it.owners[0].matches);
    assert_true(it.owners[0].observed);
    assert_string_equal(it.owners[0].name, "not-a"); /* the reference's, to read live */
    sw_gc_item_dispose(&it);
    assert_int_equal(owner_state(f, "ug", 0), SW_GC_OWNER_PRESENT);
    sw_gc_graph_remove(f->g, "ubn");
    sw_gc_graph_remove(f->g, "ubk");
    sw_gc_graph_remove(f->g, "ug");
    sw_gc_graph_remove(f->g, "ua");
    assert_int_equal(sw_gc_graph_size(f->g), 0);

    /* a virtual node takes the first reference's coordinates; a wrong first one is not the
     * owner's identity once the owner is seen, and its dependent is looked at then */
    clear(f);
    upsert(f, f->cm, obj("d1", "n", "ud1", "5", wrong_name, NULL, false));
    upsert(f, f->cm, obj("d2", "n", "ud2", "6", right, NULL, false));
    assert_int_equal(owner_state(f, "ud2", 0), SW_GC_OWNER_UNKNOWN); /* virtual "not-a" */
    clear(f);
    upsert(f, f->cm, obj("a", "n", "ua", "7", NULL, NULL, false));
    assert_true(queued(f, "d:ud1"));
    assert_false(queued(f, "d:ud2"));
    assert_int_equal(owner_state(f, "ud2", 0), SW_GC_OWNER_PRESENT);
    assert_int_equal(owner_state(f, "ud1", 0), SW_GC_OWNER_UNKNOWN);
    sw_gc_graph_remove(f->g, "ud1");
    sw_gc_graph_remove(f->g, "ud2");
    sw_gc_graph_remove(f->g, "ua");
    assert_int_equal(sw_gc_graph_size(f->g), 0);

    /* kinds no server could serve do not grow the table */
    char kind[400];
    memset(kind, 'K', sizeof(kind) - 1);
    kind[sizeof(kind) - 1] = '\0';
    assert_int_equal(sw_gc_graph_kind(f->g, "example.com", kind), 0);
}

static void test_relist(void **state)
{
    fixture *f = *state;
    const char *owner[] = {"ua|ConfigMap|a", NULL};
    sw_gc_graph_list_start(f->g, f->cm);
    upsert(f, f->cm, obj("a", "n", "ua", "1", NULL, NULL, false));
    upsert(f, f->cm, obj("b", "n", "ub", "2", owner, NULL, false));
    upsert(f, f->is, obj("s", "n", "us", "3", NULL, NULL, false));
    sw_gc_graph_list_done(f->g, f->cm);
    assert_int_equal(sw_gc_graph_size(f->g), 3);
    /* a watch gap: a was deleted meanwhile; the next list does not hold it */
    sw_gc_graph_list_start(f->g, f->cm);
    upsert(f, f->cm, obj("b", "n", "ub", "2", owner, NULL, false));
    sw_gc_graph_list_done(f->g, f->cm);
    assert_true(queued(f, "d:ua")); /* dropped as if deleted: looked at */
    assert_int_equal(owner_state(f, "ub", 0), SW_GC_OWNER_UNKNOWN);
    /* another kind's objects are not touched by this kind's lists */
    sw_gc_item it;
    assert_int_equal(sw_gc_graph_item(f->g, "us", &it), 0);
    sw_gc_item_dispose(&it);
    sw_gc_graph_list_start(f->g, f->cm);
    sw_gc_graph_list_done(f->g, f->cm);
    sw_gc_graph_remove(f->g, "us");
    assert_int_equal(sw_gc_graph_size(f->g), 0);
}

static void test_many(void **state)
{
    fixture *f = *state;
    char name[32], uid[32], ouid[32];
    /* enough nodes to grow the table several times */
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof(name), "o%d", i);
        snprintf(uid, sizeof(uid), "uo%d", i);
        upsert(f, f->cm, obj(name, "n", uid, "1", NULL, NULL, false));
        for (int j = 0; j < 3; j++) {
            char ref[64];
            snprintf(ref, sizeof(ref), "uo%d|ConfigMap|o%d", i, i);
            const char *owner[] = {ref, NULL};
            snprintf(name, sizeof(name), "d%d-%d", i, j);
            snprintf(ouid, sizeof(ouid), "ud%d-%d", i, j);
            upsert(f, f->cm, obj(name, "n", ouid, "2", owner, NULL, false));
        }
    }
    assert_int_equal(sw_gc_graph_size(f->g), 20000);
    assert_int_equal(json_object_size(f->queued), 0);
    for (int i = 0; i < 5000; i++) {
        snprintf(uid, sizeof(uid), "uo%d", i);
        sw_gc_graph_remove(f->g, uid);
    }
    assert_int_equal(json_object_size(f->queued), 5000); /* every owner, once */
    sw_gc_graph_list_start(f->g, f->cm);
    sw_gc_graph_list_done(f->g, f->cm); /* an empty list drops every one */
    assert_int_equal(sw_gc_graph_size(f->g), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_several_owners_cross_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_scoped_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recreated_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unseen_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreground_and_orphan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coordinates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
