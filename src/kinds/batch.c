/* batch: batch/v1 Job and CronJob (see workloads.h): defaults, validation (a Job's pods restart
 * OnFailure or Never; a CronJob needs a schedule), status subresources and columns. */
#include "kinds/workloads.h"

#include "kinds/imagepolicy.h"
#include "kinds/podspec.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"
#include "util/time.h"

#include <stdio.h>
#include <string.h>

#define JOB_SPEC                                                                                   \
    "{\"parallelism\":\"integer\",\"completions\":\"integer\",\"activeDeadlineSeconds\":"          \
    "\"integer\",\"podFailurePolicy\":\"any\",\"successPolicy\":\"any\",\"backoffLimit\":"         \
    "\"integer\",\"backoffLimitPerIndex\":\"integer\",\"maxFailedIndexes\":\"integer\","           \
    "\"selector\":" SW_SELECTOR_SCHEMA                                                             \
    ",\"manualSelector\":\"boolean\",\"template\":" SW_POD_TEMPLATE_SCHEMA                         \
    ",\"ttlSecondsAfterFinished\":\"integer\",\"completionMode\":"                                 \
    "\"string\",\"suspend\":\"boolean\",\"podReplacementPolicy\":\"string\",\"managedBy\":"        \
    "\"string\"}"

static const char *const job_restarts[] = {"OnFailure", "Never", NULL};

static void default_job_spec(json_t *spec)
{
    if (!json_is_object(spec))
        return;
    sw_json_default(spec, "parallelism", json_integer(1));
    sw_json_default(spec, "completions", json_integer(1));
    sw_json_default(spec, "backoffLimit", json_integer(6));
    sw_json_default(spec, "completionMode", json_string("NonIndexed"));
    sw_json_default(spec, "suspend", json_false());
    /* a Job's pods have no default restart policy: it is required (OnFailure or Never) */
    json_t *ps = sw_json_at(spec, "template.spec");
    const json_t *rp = json_object_get(ps, "restartPolicy");
    sw_podspec_default(ps, "Never");
    if (!rp && json_is_object(ps))
        json_object_del(ps, "restartPolicy");
}

static int validate_job_spec(const json_t *spec, const char *field)
{
    char path[200];
    static const char *const modes[] = {"NonIndexed", "Indexed", NULL};
    snprintf(path, sizeof(path), "%s.template.spec.restartPolicy", field);
    if (!sw_json_str_at(spec, "template.spec.restartPolicy"))
        return sw_error_set(SW_EINVALID,
                            "%s: Required value: valid values: \"OnFailure\", "
                            "\"Never\"",
                            path);
    snprintf(path, sizeof(path), "%s.template", field);
    int error = sw_podtemplate_validate(json_object_get(spec, "template"), path, job_restarts);
    static const char *const counts[] = {"parallelism", "completions", "backoffLimit",
                                         "activeDeadlineSeconds", "ttlSecondsAfterFinished"};
    for (size_t i = 0; error == 0 && i < sizeof(counts) / sizeof(counts[0]); i++) {
        int64_t v;
        char p[64];
        snprintf(p, sizeof(p), "%s", counts[i]);
        if (sw_json_int_at(spec, p, &v) && v < 0)
            error = sw_error_set(SW_EINVALID,
                                 "%s.%s: Invalid value: %lld: must be greater than or equal to 0",
                                 field, counts[i], (long long)v);
    }
    if (error == 0)
        error = sw_kind_check_enum(spec, field, "completionMode", modes, false);
    return error;
}

/* ---- Job ---- */

static int job_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    default_job_spec(sw_json_obj_path(obj, "spec"));
    return 0;
}

static int job_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    default_job_spec(sw_json_obj_path(obj, "spec"));
    return 0;
}

static int job_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    int error = validate_job_spec(json_object_get(obj, "spec"), "spec");
    if (error == 0 && old &&
        !sw_json_same(sw_json_at(obj, "spec.template"), sw_json_at(old, "spec.template")))
        error = sw_error_set(SW_EINVALID, "spec.template: Invalid value: field is immutable");
    return error;
}

static void completions_cell(const json_t *obj, sw_buf *out)
{
    int64_t done = 0, want = 1;
    sw_json_int_at(obj, "status.succeeded", &done);
    sw_json_int_at(obj, "spec.completions", &want);
    sw_buf_printf(out, "%lld/%lld", (long long)done, (long long)want);
}

static void duration_cell(const json_t *obj, sw_buf *out)
{
    int64_t a, b;
    char d[32];
    if (sw_time_parse(sw_json_str_at(obj, "status.startTime") ?: "", &a) < 0)
        return;
    if (sw_time_parse(sw_json_str_at(obj, "status.completionTime") ?: "", &b) < 0)
        b = sw_time_now();
    sw_time_human(b - a, d, sizeof(d));
    sw_buf_puts(out, d);
}

static const sw_column job_columns[] = {
    {"Completions", "string", "Succeeded out of the desired completions", 0, completions_cell, NULL,
     NULL},
    {"Duration", "string", "How long it ran", 0, duration_cell, NULL, NULL},
    {"Containers", "string", "The template's containers", 1, sw_workload_containers_cell, NULL,
     NULL},
    {"Images", "string", "The template's images", 1, sw_workload_images_cell, NULL, NULL},
};

SW_IMAGE_POLICY_ADMIT(job_admit, "Job")

const sw_kind sw_kind_job = {
    .group = "batch",
    .version = "v1",
    .kind = "Job",
    .plural = "jobs",
    .singular = "job",
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text = "{\"spec\":" JOB_SPEC ",\"status\":{\"conditions\":[\"any\"],\"startTime\":"
                   "\"string\",\"completionTime\":\"string\",\"active\":\"integer\","
                   "\"succeeded\":\"integer\",\"failed\":\"integer\",\"terminating\":"
                   "\"integer\",\"completedIndexes\":\"string\",\"failedIndexes\":\"string\","
                   "\"uncountedTerminatedPods\":\"any\",\"ready\":\"integer\"}}",
    .smp = sw_smp_schema_core,
    .columns = job_columns,
    .ncolumns = 4,
    .prepare_create = job_prepare,
    .prepare_update = job_update,
    .validate = job_validate,
    .admit = job_admit,
};

/* ---- CronJob ---- */

static int cj_prepare(const sw_kind_ctx *ctx, json_t *obj)
{
    json_t *spec = sw_json_obj_path(obj, "spec");
    sw_json_default(spec, "concurrencyPolicy", json_string("Allow"));
    sw_json_default(spec, "suspend", json_false());
    sw_json_default(spec, "successfulJobsHistoryLimit", json_integer(3));
    sw_json_default(spec, "failedJobsHistoryLimit", json_integer(1));
    default_job_spec(sw_json_at(spec, "jobTemplate.spec"));
    return 0;
}

static int cj_update(const sw_kind_ctx *ctx, json_t *obj, const json_t *old)
{
    return cj_prepare(ctx, obj);
}

/* Five cron fields (or an @-macro): the shape only; slipway runs no schedule. */
static bool schedule_ok(const char *s)
{
    if (!s || !*s)
        return false;
    if (*s == '@')
        return sw_str_one_of(s, (const char *const[]){"@yearly", "@annually", "@monthly", "@weekly",
                                                      "@daily", "@midnight", "@hourly", NULL}) ||
               sw_str_prefix(s, "@every ");
    int fields = 0;
    for (const char *p = s; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        fields++;
        while (*p && *p != ' ' && *p != '\t') {
            if (!strchr("0123456789*/,-?LW#ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                        *p))
                return false;
            p++;
        }
    }
    return fields == 5;
}

static int cj_validate(const sw_kind_ctx *ctx, const json_t *obj, const json_t *old)
{
    static const char *const policies[] = {"Allow", "Forbid", "Replace", NULL};
    const char *sched = sw_json_str_at(obj, "spec.schedule");
    if (!sched || !*sched)
        return sw_error_set(SW_EINVALID, "spec.schedule: Required value");
    if (!schedule_ok(sched))
        return sw_error_set(SW_EINVALID,
                            "spec.schedule: Invalid value: \"%.100s\": expected exactly 5 fields "
                            "or a descriptor such as @hourly",
                            sched);
    int error = sw_kind_check_enum(obj, NULL, "spec.concurrencyPolicy", policies, false);
    if (error == 0)
        error =
            validate_job_spec(sw_json_at(obj, "spec.jobTemplate.spec"), "spec.jobTemplate.spec");
    return error;
}

static void schedule_cell(const json_t *obj, sw_buf *out)
{
    sw_column_str(obj, "spec.schedule", out);
}

static void suspend_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_puts(out, sw_json_bool_at(obj, "spec.suspend") ? "True" : "False");
}

static void active_cell(const json_t *obj, sw_buf *out)
{
    sw_buf_printf(out, "%zu", json_array_size(sw_json_at(obj, "status.active")));
}

static void last_cell(const json_t *obj, sw_buf *out)
{
    int64_t t;
    char d[32];
    if (sw_time_parse(sw_json_str_at(obj, "status.lastScheduleTime") ?: "", &t) < 0) {
        sw_buf_puts(out, "<none>");
        return;
    }
    sw_time_human(sw_time_now() - t, d, sizeof(d));
    sw_buf_puts(out, d);
}

static const sw_column cj_columns[] = {
    {"Schedule", "string", "The cron schedule", 0, schedule_cell, NULL, NULL},
    {"Suspend", "boolean", "Whether new jobs are suspended", 0, suspend_cell, NULL, NULL},
    {"Active", "integer", "Jobs running", 0, active_cell, NULL, NULL},
    {"Last Schedule", "string", "When a job was last scheduled", 0, last_cell, NULL, NULL},
};

SW_IMAGE_POLICY_ADMIT(cj_admit, "CronJob")

const sw_kind sw_kind_cronjob = {
    .group = "batch",
    .version = "v1",
    .kind = "CronJob",
    .plural = "cronjobs",
    .singular = "cronjob",
    .short_names = {"cj"},
    .categories = {"all"},
    .namespaced = true,
    .has_status = true,
    .spec_generation = true,
    .name_rule = SW_NAME_SUBDOMAIN,
    .schema_text =
        "{\"spec\":{\"schedule\":\"string\",\"timeZone\":\"string\","
        "\"startingDeadlineSeconds\":\"integer\",\"concurrencyPolicy\":\"string\","
        "\"suspend\":\"boolean\",\"jobTemplate\":{\"metadata\":\"any\",\"spec\":" JOB_SPEC
        "},\"successfulJobsHistoryLimit\":\"integer\","
        "\"failedJobsHistoryLimit\":\"integer\"},\"status\":{\"active\":[\"any\"],"
        "\"lastScheduleTime\":\"string\",\"lastSuccessfulTime\":\"string\"}}",
    .smp = sw_smp_schema_core,
    .columns = cj_columns,
    .ncolumns = 4,
    .prepare_create = cj_prepare,
    .prepare_update = cj_update,
    .validate = cj_validate,
    .admit = cj_admit,
};
