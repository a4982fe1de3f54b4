/* Unit tests for src/meta/openapischema: a table-driven validation corpus (every keyword with
 * the exact causes it reports), compile-time refusals of non-structural schemas, refused and
 * malformed keywords, the root schema allowed with a status subresource, pruning (root and
 * embedded TypeMeta/ObjectMeta kept, preserve-unknown-fields, additionalProperties, the
 * unknown-field paths), defaulting (nested defaults, nulls), the prune -> default -> validate
 * order, int-or-string, nullable, list-type equality, long values and paths, one schema used
 * from several threads, and hostile schemas (deep nesting, long or costly patterns, too many
 * nodes, too many causes). Schema and object texts are written with ' for " and converted
 * before parsing; expected causes are matched exactly, in any order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meta/openapischema.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/json.h"
#include "util/str.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* Parses a test text in which ' stands for ". */
static json_t *parse(const char *text)
{
    size_t n = strlen(text);
    char *copy = sw_strdup(text);
    for (size_t i = 0; i < n; i++)
        if (copy[i] == '\'')
            copy[i] = '"';
    json_t *out = NULL;
    if (sw_json_parse(copy, n, 128, 0, &out) < 0)
        fail_msg("bad test JSON (%s): %s", sw_error_msg(), text);
    sw_free(copy);
    return out;
}

static void print_json(const char *label, const json_t *j)
{
    if (!j) {
        print_message("  %s: (none)\n", label);
        return;
    }
    char *s = sw_json_dumps(j, NULL);
    print_message("  %s: %s\n", label, s);
    sw_free(s);
}

/* Compiles the schema text at field "schema"; the test fails when it is refused. */
static sw_oas *compile(const char *schema_text)
{
    json_t *schema = parse(schema_text);
    sw_oas *s = NULL;
    json_t *causes = NULL;
    int rc = sw_oas_compile(schema, "schema", false, &s, &causes);
    if (rc != 0) {
        print_message("schema refused: %s\n", schema_text);
        print_json("causes", causes);
        json_decref(causes);
        json_decref(schema);
        fail_msg("sw_oas_compile returned %d", rc);
    }
    assert_non_null(s);
    json_decref(schema);
    return s;
}

static const char *str_member(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* ---- the validation corpus ---- */

struct cause {
    const char *reason;
    const char *field;
    const char *message;
};

#define MAX_WANT 4

struct vcase {
    const char *name;
    const char *schema;
    const char *object;
    struct cause want[MAX_WANT]; /* ends at the first NULL reason; none at all = valid */
};

/* The wanted causes of a valid case: none. */
/* clang-format off */
#define VALID {{NULL, NULL, NULL}}
/* clang-format on */

/* A root with one object property "spec" whose properties are props. */
#define SPEC(props)                                                                                \
    "{'type':'object','properties':{'spec':{'type':'object','properties':{" props "}}}}"

static const struct vcase corpus[] = {
    /* type */
    {"integer accepts an integer", SPEC("'replicas':{'type':'integer'}"), "{'spec':{'replicas':3}}",
     VALID},
    {"integer refuses a string",
     SPEC("'replicas':{'type':'integer'}"),
     "{'spec':{'replicas':'3'}}",
     {{"FieldValueTypeInvalid", "spec.replicas",
       "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""}}},
    {"a whole real passes integer", SPEC("'replicas':{'type':'integer'}"),
     "{'spec':{'replicas':3.0}}", VALID},
    {"a fractional real is a number, not an integer",
     SPEC("'replicas':{'type':'integer'}"),
     "{'spec':{'replicas':3.5}}",
     {{"FieldValueTypeInvalid", "spec.replicas",
       "Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""}}},
    {"number accepts an integer", SPEC("'ratio':{'type':'number'}"), "{'spec':{'ratio':3}}", VALID},
    {"number refuses a string",
     SPEC("'ratio':{'type':'number'}"),
     "{'spec':{'ratio':'x'}}",
     {{"FieldValueTypeInvalid", "spec.ratio",
       "Invalid value: \"string\": spec.ratio in body must be of type number: \"string\""}}},
    {"string refuses a boolean",
     SPEC("'name':{'type':'string'}"),
     "{'spec':{'name':true}}",
     {{"FieldValueTypeInvalid", "spec.name",
       "Invalid value: \"boolean\": spec.name in body must be of type string: \"boolean\""}}},
    {"boolean refuses a string",
     SPEC("'on':{'type':'boolean'}"),
     "{'spec':{'on':'yes'}}",
     {{"FieldValueTypeInvalid", "spec.on",
       "Invalid value: \"string\": spec.on in body must be of type boolean: \"string\""}}},
    {"object refuses an array",
     SPEC("'sub':{'type':'object'}"),
     "{'spec':{'sub':[]}}",
     {{"FieldValueTypeInvalid", "spec.sub",
       "Invalid value: \"array\": spec.sub in body must be of type object: \"array\""}}},
    {"array refuses an object",
     SPEC("'list':{'type':'array','items':{'type':'string'}}"),
     "{'spec':{'list':{}}}",
     {{"FieldValueTypeInvalid", "spec.list",
       "Invalid value: \"object\": spec.list in body must be of type array: \"object\""}}},
    {"a non-nullable null is a type error",
     SPEC("'name':{'type':'string'}"),
     "{'spec':{'name':null}}",
     {{"FieldValueTypeInvalid", "spec.name",
       "Invalid value: \"null\": spec.name in body must be of type string: \"null\""}}},
    {"spec itself of the wrong type",
     SPEC("'name':{'type':'string'}"),
     "{'spec':'x'}",
     {{"FieldValueTypeInvalid", "spec",
       "Invalid value: \"string\": spec in body must be of type object: \"string\""}}},

    /* nullable */
    {"nullable string accepts null", SPEC("'name':{'type':'string','nullable':true}"),
     "{'spec':{'name':null}}", VALID},
    {"nullable integer with a minimum accepts null",
     SPEC("'n':{'type':'integer','nullable':true,'minimum':5}"), "{'spec':{'n':null}}", VALID},
    {"nullable object accepts null",
     SPEC("'sub':{'type':'object','nullable':true,'required':['a'],"
          "'properties':{'a':{'type':'string'}}}"),
     "{'spec':{'sub':null}}", VALID},
    {"nullable still checks a non-null value",
     SPEC("'n':{'type':'integer','nullable':true,'minimum':5}"),
     "{'spec':{'n':2}}",
     {{"FieldValueInvalid", "spec.n",
       "Invalid value: 2: spec.n in body should be greater than or equal to 5"}}},

    /* int-or-string */
    {"int-or-string accepts an integer", SPEC("'port':{'x-kubernetes-int-or-string':true}"),
     "{'spec':{'port':80}}", VALID},
    {"int-or-string accepts a string", SPEC("'port':{'x-kubernetes-int-or-string':true}"),
     "{'spec':{'port':'80%'}}", VALID},
    {"int-or-string accepts a whole real", SPEC("'port':{'x-kubernetes-int-or-string':true}"),
     "{'spec':{'port':8.0}}", VALID},
    {"int-or-string refuses a boolean",
     SPEC("'port':{'x-kubernetes-int-or-string':true}"),
     "{'spec':{'port':true}}",
     {{"FieldValueTypeInvalid", "spec.port",
       "Invalid value: \"boolean\": spec.port in body must be of type int-or-string: "
       "\"boolean\""}}},
    {"int-or-string refuses a fraction",
     SPEC("'port':{'x-kubernetes-int-or-string':true}"),
     "{'spec':{'port':1.5}}",
     {{"FieldValueTypeInvalid", "spec.port",
       "Invalid value: \"number\": spec.port in body must be of type int-or-string: "
       "\"number\""}}},
    {"int-or-string with the anyOf form",
     SPEC("'port':{'x-kubernetes-int-or-string':true,"
          "'anyOf':[{'type':'integer'},{'type':'string'}]}"),
     "{'spec':{'port':'http'}}", VALID},

    /* enum */
    {"enum accepts a member", SPEC("'color':{'type':'string','enum':['red','blue']}"),
     "{'spec':{'color':'blue'}}", VALID},
    {"enum refuses a string",
     SPEC("'color':{'type':'string','enum':['red','blue']}"),
     "{'spec':{'color':'pink'}}",
     {{"FieldValueNotSupported", "spec.color",
       "Unsupported value: \"pink\": supported values: \"red\", \"blue\""}}},
    {"enum refuses an integer",
     SPEC("'n':{'type':'integer','enum':[1,2]}"),
     "{'spec':{'n':3}}",
     {{"FieldValueNotSupported", "spec.n", "Unsupported value: 3: supported values: 1, 2"}}},
    {"enum quotes the value as JSON",
     SPEC("'color':{'type':'string','enum':['red','blue']}"),
     "{'spec':{'color':'a\\'b'}}",
     {{"FieldValueNotSupported", "spec.color",
       "Unsupported value: \"a\\\"b\": supported values: \"red\", \"blue\""}}},

    /* maxLength / minLength, in runes */
    {"maxLength at the limit", SPEC("'name':{'type':'string','maxLength':5}"),
     "{'spec':{'name':'abcde'}}", VALID},
    {"maxLength over the limit",
     SPEC("'name':{'type':'string','maxLength':5}"),
     "{'spec':{'name':'abcdef'}}",
     {{"FieldValueTooLong", "spec.name", "Too long: may not be more than 5 bytes"}}},
    {"maxLength counts runes, not bytes", SPEC("'name':{'type':'string','maxLength':3}"),
     "{'spec':{'name':'h\xc3\xa9\xc3\xa9'}}", VALID},
    {"maxLength over in runes",
     SPEC("'name':{'type':'string','maxLength':2}"),
     "{'spec':{'name':'\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e'}}",
     {{"FieldValueTooLong", "spec.name", "Too long: may not be more than 2 bytes"}}},
    {"minLength under the limit",
     SPEC("'name':{'type':'string','minLength':3}"),
     "{'spec':{'name':'ab'}}",
     {{"FieldValueInvalid", "spec.name",
       "Invalid value: \"ab\": spec.name in body should be at least 3 chars long"}}},
    {"minLength counts runes",
     SPEC("'name':{'type':'string','minLength':2}"),
     "{'spec':{'name':'\xc3\xa9'}}",
     {{"FieldValueInvalid", "spec.name",
       "Invalid value: \"\xc3\xa9\": spec.name in body should be at least 2 chars long"}}},

    /* maximum / minimum */
    {"maximum exceeded",
     SPEC("'replicas':{'type':'integer','maximum':10}"),
     "{'spec':{'replicas':15}}",
     {{"FieldValueInvalid", "spec.replicas",
       "Invalid value: 15: spec.replicas in body should be less than or equal to 10"}}},
    {"maximum reached", SPEC("'replicas':{'type':'integer','maximum':10}"),
     "{'spec':{'replicas':10}}", VALID},
    {"exclusiveMaximum reached",
     SPEC("'replicas':{'type':'integer','maximum':10,'exclusiveMaximum':true}"),
     "{'spec':{'replicas':10}}",
     {{"FieldValueInvalid", "spec.replicas",
       "Invalid value: 10: spec.replicas in body should be less than 10"}}},
    {"minimum not reached",
     SPEC("'replicas':{'type':'integer','minimum':1}"),
     "{'spec':{'replicas':0}}",
     {{"FieldValueInvalid", "spec.replicas",
       "Invalid value: 0: spec.replicas in body should be greater than or equal to 1"}}},
    {"exclusiveMinimum reached",
     SPEC("'replicas':{'type':'integer','minimum':1,'exclusiveMinimum':true}"),
     "{'spec':{'replicas':1}}",
     {{"FieldValueInvalid", "spec.replicas",
       "Invalid value: 1: spec.replicas in body should be greater than 1"}}},
    {"fractional bound and value",
     SPEC("'ratio':{'type':'number','maximum':1.5}"),
     "{'spec':{'ratio':2.25}}",
     {{"FieldValueInvalid", "spec.ratio",
       "Invalid value: 2.25: spec.ratio in body should be less than or equal to 1.5"}}},
    {"negative bound",
     SPEC("'n':{'type':'integer','minimum':-2}"),
     "{'spec':{'n':-5}}",
     {{"FieldValueInvalid", "spec.n",
       "Invalid value: -5: spec.n in body should be greater than or equal to -2"}}},
    {"a fraction above an integral bound",
     SPEC("'ratio':{'type':'number','maximum':10}"),
     "{'spec':{'ratio':10.5}}",
     {{"FieldValueInvalid", "spec.ratio",
       "Invalid value: 10.5: spec.ratio in body should be less than or equal to 10"}}},
    {"a fraction within bounds", SPEC("'ratio':{'type':'number','minimum':0,'maximum':1}"),
     "{'spec':{'ratio':0.5}}", VALID},

    /* multipleOf */
    {"multipleOf met", SPEC("'n':{'type':'integer','multipleOf':3}"), "{'spec':{'n':9}}", VALID},
    {"multipleOf missed",
     SPEC("'n':{'type':'integer','multipleOf':3}"),
     "{'spec':{'n':10}}",
     {{"FieldValueInvalid", "spec.n",
       "Invalid value: 10: spec.n in body should be a multiple of 3"}}},
    {"fractional multipleOf met", SPEC("'ratio':{'type':'number','multipleOf':0.5}"),
     "{'spec':{'ratio':1.5}}", VALID},
    {"fractional multipleOf missed",
     SPEC("'ratio':{'type':'number','multipleOf':0.5}"),
     "{'spec':{'ratio':1.25}}",
     {{"FieldValueInvalid", "spec.ratio",
       "Invalid value: 1.25: spec.ratio in body should be a multiple of 0.5"}}},

    /* pattern */
    {"pattern matched", SPEC("'name':{'type':'string','pattern':'^a'}"), "{'spec':{'name':'abc'}}",
     VALID},
    {"pattern missed",
     SPEC("'name':{'type':'string','pattern':'^a'}"),
     "{'spec':{'name':'xbc'}}",
     {{"FieldValueInvalid", "spec.name",
       "Invalid value: \"xbc\": spec.name in body should match '^a'"}}},
    {"pattern is a search, not a full match", SPEC("'name':{'type':'string','pattern':'b'}"),
     "{'spec':{'name':'abc'}}", VALID},
    {"pattern with \\d matched", SPEC("'id':{'type':'string','pattern':'^\\\\d+$'}"),
     "{'spec':{'id':'123'}}", VALID},
    {"pattern with \\d missed",
     SPEC("'id':{'type':'string','pattern':'^\\\\d+$'}"),
     "{'spec':{'id':'12a'}}",
     {{"FieldValueInvalid", "spec.id",
       "Invalid value: \"12a\": spec.id in body should match '^\\d+$'"}}},
    {"pattern with \\w matched", SPEC("'id':{'type':'string','pattern':'^\\\\w+$'}"),
     "{'spec':{'id':'a_b1'}}", VALID},
    {"pattern with \\S missed",
     SPEC("'id':{'type':'string','pattern':'^\\\\S+$'}"),
     "{'spec':{'id':'a b'}}",
     {{"FieldValueInvalid", "spec.id",
       "Invalid value: \"a b\": spec.id in body should match '^\\S+$'"}}},
    {"pattern with groups missed",
     SPEC("'name':{'type':'string','pattern':'^[a-z]+(-[a-z]+)*$'}"),
     "{'spec':{'name':'a-b-'}}",
     {{"FieldValueInvalid", "spec.name",
       "Invalid value: \"a-b-\": spec.name in body should match '^[a-z]+(-[a-z]+)*$'"}}},

    /* format */
    {"date accepted", SPEC("'d':{'type':'string','format':'date'}"), "{'spec':{'d':'2024-01-31'}}",
     VALID},
    {"date refused",
     SPEC("'d':{'type':'string','format':'date'}"),
     "{'spec':{'d':'2024-13-01'}}",
     {{"FieldValueTypeInvalid", "spec.d",
       "Invalid value: \"2024-13-01\": spec.d in body must be of type date: \"2024-13-01\""}}},
    {"date-time accepted", SPEC("'t':{'type':'string','format':'date-time'}"),
     "{'spec':{'t':'2024-01-01T00:00:00Z'}}", VALID},
    {"date-time refused",
     SPEC("'t':{'type':'string','format':'date-time'}"),
     "{'spec':{'t':'yesterday'}}",
     {{"FieldValueTypeInvalid", "spec.t",
       "Invalid value: \"yesterday\": spec.t in body must be of type date-time: \"yesterday\""}}},
    {"uuid accepted", SPEC("'u':{'type':'string','format':'uuid'}"),
     "{'spec':{'u':'123e4567-e89b-12d3-a456-426614174000'}}", VALID},
    {"uuid refused",
     SPEC("'u':{'type':'string','format':'uuid'}"),
     "{'spec':{'u':'123e4567'}}",
     {{"FieldValueTypeInvalid", "spec.u",
       "Invalid value: \"123e4567\": spec.u in body must be of type uuid: \"123e4567\""}}},
    {"email accepted", SPEC("'e':{'type':'string','format':'email'}"),
     "{'spec':{'e':'a@example.com'}}", VALID},
    {"email refused",
     SPEC("'e':{'type':'string','format':'email'}"),
     "{'spec':{'e':'not-an-email'}}",
     {{"FieldValueTypeInvalid", "spec.e",
       "Invalid value: \"not-an-email\": spec.e in body must be of type email: "
       "\"not-an-email\""}}},
    {"hostname accepted", SPEC("'h':{'type':'string','format':'hostname'}"),
     "{'spec':{'h':'example.com'}}", VALID},
    {"hostname refused",
     SPEC("'h':{'type':'string','format':'hostname'}"),
     "{'spec':{'h':'exa mple.com'}}",
     {{"FieldValueTypeInvalid", "spec.h",
       "Invalid value: \"exa mple.com\": spec.h in body must be of type hostname: "
       "\"exa mple.com\""}}},
    {"ipv4 accepted", SPEC("'ip':{'type':'string','format':'ipv4'}"), "{'spec':{'ip':'10.0.0.1'}}",
     VALID},
    {"ipv4 refused",
     SPEC("'ip':{'type':'string','format':'ipv4'}"),
     "{'spec':{'ip':'10.0.0.256'}}",
     {{"FieldValueTypeInvalid", "spec.ip",
       "Invalid value: \"10.0.0.256\": spec.ip in body must be of type ipv4: \"10.0.0.256\""}}},
    {"ipv6 accepted", SPEC("'ip':{'type':'string','format':'ipv6'}"),
     "{'spec':{'ip':'2001:db8::1'}}", VALID},
    {"ipv6 refused",
     SPEC("'ip':{'type':'string','format':'ipv6'}"),
     "{'spec':{'ip':'1::2::3'}}",
     {{"FieldValueTypeInvalid", "spec.ip",
       "Invalid value: \"1::2::3\": spec.ip in body must be of type ipv6: \"1::2::3\""}}},
    {"cidr accepted", SPEC("'net':{'type':'string','format':'cidr'}"),
     "{'spec':{'net':'10.0.0.0/8'}}", VALID},
    {"cidr refused",
     SPEC("'net':{'type':'string','format':'cidr'}"),
     "{'spec':{'net':'10.0.0.0'}}",
     {{"FieldValueTypeInvalid", "spec.net",
       "Invalid value: \"10.0.0.0\": spec.net in body must be of type cidr: \"10.0.0.0\""}}},
    {"uri accepted", SPEC("'link':{'type':'string','format':'uri'}"),
     "{'spec':{'link':'https://example.com/x?y=1'}}", VALID},
    {"uri refused",
     SPEC("'link':{'type':'string','format':'uri'}"),
     "{'spec':{'link':'not a uri'}}",
     {{"FieldValueTypeInvalid", "spec.link",
       "Invalid value: \"not a uri\": spec.link in body must be of type uri: \"not a uri\""}}},
    {"byte accepted", SPEC("'b':{'type':'string','format':'byte'}"), "{'spec':{'b':'aGVsbG8='}}",
     VALID},
    {"byte refused",
     SPEC("'b':{'type':'string','format':'byte'}"),
     "{'spec':{'b':'!!!'}}",
     {{"FieldValueTypeInvalid", "spec.b",
       "Invalid value: \"!!!\": spec.b in body must be of type byte: \"!!!\""}}},
    {"duration accepted", SPEC("'dur':{'type':'string','format':'duration'}"),
     "{'spec':{'dur':'1h30m'}}", VALID},
    {"duration refused",
     SPEC("'dur':{'type':'string','format':'duration'}"),
     "{'spec':{'dur':'forever'}}",
     {{"FieldValueTypeInvalid", "spec.dur",
       "Invalid value: \"forever\": spec.dur in body must be of type duration: \"forever\""}}},
    {"an unknown format is ignored", SPEC("'c':{'type':'string','format':'color'}"),
     "{'spec':{'c':'not checked'}}", VALID},
    {"int32 on a string is a no-op", SPEC("'c':{'type':'string','format':'int32'}"),
     "{'spec':{'c':'abc'}}", VALID},
    {"int64 on an integer", SPEC("'n':{'type':'integer','format':'int64'}"),
     "{'spec':{'n':9007199254740993}}", VALID},

    /* arrays */
    {"maxItems exceeded",
     SPEC("'list':{'type':'array','maxItems':2,'items':{'type':'string'}}"),
     "{'spec':{'list':['a','b','c']}}",
     {{"FieldValueTooMany", "spec.list", "Too many: 3: must have at most 2 items"}}},
    {"minItems not reached",
     SPEC("'list':{'type':'array','minItems':2,'items':{'type':'string'}}"),
     "{'spec':{'list':['a']}}",
     {{"FieldValueInvalid", "spec.list",
       "Invalid value: 1: spec.list in body should have at least 2 items"}}},
    {"an item of the wrong type",
     SPEC("'list':{'type':'array','items':{'type':'string'}}"),
     "{'spec':{'list':['a',1]}}",
     {{"FieldValueTypeInvalid", "spec.list[1]",
       "Invalid value: \"integer\": spec.list[1] in body must be of type string: \"integer\""}}},
    {"a required field missing in an item",
     SPEC("'items':{'type':'array','items':{'type':'object','required':['name'],"
          "'properties':{'name':{'type':'string'}}}}"),
     "{'spec':{'items':[{'name':'a'},{}]}}",
     {{"FieldValueRequired", "spec.items[1].name", "Required value"}}},
    {"an item above its maximum",
     SPEC("'list':{'type':'array','items':{'type':'integer','maximum':3}}"),
     "{'spec':{'list':[1,2,4]}}",
     {{"FieldValueInvalid", "spec.list[2]",
       "Invalid value: 4: spec.list[2] in body should be less than or equal to 3"}}},

    /* objects */
    {"maxProperties exceeded",
     SPEC("'labels':{'type':'object','maxProperties':1,'additionalProperties':{'type':'string'}}"),
     "{'spec':{'labels':{'a':'x','b':'y'}}}",
     {{"FieldValueTooMany", "spec.labels", "Too many: 2: must have at most 1 items"}}},
    {"minProperties not reached",
     SPEC("'labels':{'type':'object','minProperties':2,'additionalProperties':{'type':'string'}}"),
     "{'spec':{'labels':{'a':'x'}}}",
     {{"FieldValueInvalid", "spec.labels",
       "Invalid value: 1: spec.labels in body should have at least 2 properties"}}},
    {"additionalProperties schema applies to every value",
     SPEC("'labels':{'type':'object','additionalProperties':{'type':'string'}}"),
     "{'spec':{'labels':{'a':'x','b':1}}}",
     {{"FieldValueTypeInvalid", "spec.labels.b",
       "Invalid value: \"integer\": spec.labels.b in body must be of type string: \"integer\""}}},
    {"additionalProperties true takes anything",
     SPEC("'any':{'type':'object','additionalProperties':true}"),
     "{'spec':{'any':{'a':1,'b':'x'}}}", VALID},
    {"preserve-unknown-fields takes anything",
     SPEC("'free':{'type':'object','x-kubernetes-preserve-unknown-fields':true}"),
     "{'spec':{'free':{'a':{'b':[1,{'c':null}]}}}}", VALID},

    /* required */
    {"required property missing",
     SPEC("'x':{'type':'object','required':['cronSpec'],"
          "'properties':{'cronSpec':{'type':'string'}}}"),
     "{'spec':{'x':{}}}",
     {{"FieldValueRequired", "spec.x.cronSpec", "Required value"}}},
    {"required properties missing",
     "{'type':'object','properties':{'spec':{'type':'object','required':['a','b'],"
     "'properties':{'a':{'type':'string'},'b':{'type':'string'},'c':{'type':'string'}}}}}",
     "{'spec':{'c':'x'}}",
     {{"FieldValueRequired", "spec.a", "Required value"},
      {"FieldValueRequired", "spec.b", "Required value"}}},
    {"required at the root",
     "{'type':'object','required':['spec'],'properties':{'spec':{'type':'object'}}}",
     "{}",
     {{"FieldValueRequired", "spec", "Required value"}}},
    {"required present",
     "{'type':'object','properties':{'spec':{'type':'object','required':['cronSpec'],"
     "'properties':{'cronSpec':{'type':'string'}}}}}",
     "{'spec':{'cronSpec':'* * * * *'}}", VALID},

    /* junctors: a failed anyOf, oneOf or not has field <nil> (crd-gc.md 1.8), the path is in the
     * message; allOf reports the causes of its subschemas */
    {"anyOf matched", SPEC("'n':{'type':'integer','anyOf':[{'maximum':5},{'minimum':10}]}"),
     "{'spec':{'n':12}}", VALID},
    {"anyOf none matched",
     SPEC("'n':{'type':'integer','anyOf':[{'maximum':5},{'minimum':10}]}"),
     "{'spec':{'n':7}}",
     {{"FieldValueInvalid", "<nil>",
       "Invalid value: \"\": \"spec.n\" must validate at least one schema (anyOf)"}}},
    {"oneOf exactly one", SPEC("'n':{'type':'integer','oneOf':[{'maximum':5},{'minimum':3}]}"),
     "{'spec':{'n':8}}", VALID},
    {"oneOf two matched",
     SPEC("'n':{'type':'integer','oneOf':[{'maximum':5},{'minimum':3}]}"),
     "{'spec':{'n':4}}",
     {{"FieldValueInvalid", "<nil>",
       "Invalid value: \"\": \"spec.n\" must validate one and only one schema (oneOf)"}}},
    {"oneOf none matched",
     SPEC("'n':{'type':'integer','oneOf':[{'maximum':1},{'minimum':10}]}"),
     "{'spec':{'n':5}}",
     {{"FieldValueInvalid", "<nil>",
       "Invalid value: \"\": \"spec.n\" must validate one and only one schema (oneOf)"}}},
    {"not violated",
     SPEC("'n':{'type':'integer','not':{'minimum':10}}"),
     "{'spec':{'n':12}}",
     {{"FieldValueInvalid", "<nil>",
       "Invalid value: \"\": \"spec.n\" must not validate the schema (not)"}}},
    {"not satisfied", SPEC("'n':{'type':'integer','not':{'minimum':10}}"), "{'spec':{'n':5}}",
     VALID},
    {"not in an array item",
     SPEC("'list':{'type':'array','items':{'type':'integer','not':{'minimum':10}}}"),
     "{'spec':{'list':[1,12]}}",
     {{"FieldValueInvalid", "<nil>",
       "Invalid value: \"\": \"spec.list[1]\" must not validate the schema (not)"}}},
    {"allOf one failing",
     SPEC("'n':{'type':'integer','allOf':[{'minimum':1},{'maximum':5}]}"),
     "{'spec':{'n':7}}",
     {{"FieldValueInvalid", "spec.n",
       "Invalid value: 7: spec.n in body should be less than or equal to 5"}}},
    {"allOf both failing",
     SPEC("'name':{'type':'string','allOf':[{'minLength':3},{'pattern':'^a'}]}"),
     "{'spec':{'name':'b'}}",
     {{"FieldValueInvalid", "spec.name",
       "Invalid value: \"b\": spec.name in body should be at least 3 chars long"},
      {"FieldValueInvalid", "spec.name",
       "Invalid value: \"b\": spec.name in body should match '^a'"}}},
    {"allOf satisfied", SPEC("'n':{'type':'integer','allOf':[{'minimum':1},{'maximum':5}]}"),
     "{'spec':{'n':3}}", VALID},

    /* list types */
    {"set with a duplicate",
     SPEC("'tags':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'string'}}"),
     "{'spec':{'tags':['a','b','a']}}",
     {{"FieldValueDuplicate", "spec.tags[2]", "Duplicate value: \"a\""}}},
    {"set without duplicates",
     SPEC("'tags':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'string'}}"),
     "{'spec':{'tags':['a','b','c']}}", VALID},
    {"set with two duplicated integers",
     SPEC("'ns':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'integer'}}"),
     "{'spec':{'ns':[1,2,1,2]}}",
     {{"FieldValueDuplicate", "spec.ns[2]", "Duplicate value: 1"},
      {"FieldValueDuplicate", "spec.ns[3]", "Duplicate value: 2"}}},
    {"atomic list may repeat",
     SPEC("'tags':{'type':'array','x-kubernetes-list-type':'atomic','items':{'type':'string'}}"),
     "{'spec':{'tags':['a','a']}}", VALID},
    {"map list with a duplicate key",
     SPEC("'ports':{'type':'array','x-kubernetes-list-type':'map',"
          "'x-kubernetes-list-map-keys':['name'],'items':{'type':'object','required':['name'],"
          "'properties':{'name':{'type':'string'},'v':{'type':'integer'}}}}"),
     "{'spec':{'ports':[{'name':'a','v':1},{'name':'a','v':2}]}}",
     {{"FieldValueDuplicate", "spec.ports[1]", "Duplicate value: {\"name\":\"a\"}"}}},
    {"map list with distinct keys",
     SPEC("'ports':{'type':'array','x-kubernetes-list-type':'map',"
          "'x-kubernetes-list-map-keys':['name'],'items':{'type':'object','required':['name'],"
          "'properties':{'name':{'type':'string'},'v':{'type':'integer'}}}}"),
     "{'spec':{'ports':[{'name':'a','v':1},{'name':'b','v':1}]}}", VALID},
    {"map list with two keys, shown in list-map-keys order",
     SPEC("'ports':{'type':'array','x-kubernetes-list-type':'map',"
          "'x-kubernetes-list-map-keys':['port','protocol'],'items':{'type':'object',"
          "'required':['port','protocol'],'properties':{'protocol':{'type':'string'},"
          "'port':{'type':'integer'}}}}"),
     "{'spec':{'ports':[{'port':80,'protocol':'TCP'},{'port':80,'protocol':'UDP'},"
     "{'protocol':'TCP','port':80}]}}",
     {{"FieldValueDuplicate", "spec.ports[2]",
       "Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}"}}},

    /* paths and several causes */
    {"a deep path",
     SPEC("'template':{'type':'object','properties':{'containers':{'type':'array',"
          "'items':{'type':'object','properties':{'ports':{'type':'array','items':{"
          "'type':'object','properties':{'containerPort':{'type':'integer',"
          "'maximum':65535}}}}}}}}}"),
     "{'spec':{'template':{'containers':[{'ports':[{'containerPort':80},"
     "{'containerPort':70000}]}]}}}",
     {{"FieldValueInvalid", "spec.template.containers[0].ports[1].containerPort",
       "Invalid value: 70000: spec.template.containers[0].ports[1].containerPort in body should "
       "be less than or equal to 65535"}}},
    {"two failing fields",
     SPEC("'replicas':{'type':'integer','maximum':10},'name':{'type':'string'}"),
     "{'spec':{'replicas':15,'name':5}}",
     {{"FieldValueInvalid", "spec.replicas",
       "Invalid value: 15: spec.replicas in body should be less than or equal to 10"},
      {"FieldValueTypeInvalid", "spec.name",
       "Invalid value: \"integer\": spec.name in body must be of type string: \"integer\""}}},
    {"a value under additionalProperties objects",
     SPEC("'map':{'type':'object','additionalProperties':{'type':'object',"
          "'properties':{'a':{'type':'integer'}}}}"),
     "{'spec':{'map':{'k':{'a':'x'}}}}",
     {{"FieldValueTypeInvalid", "spec.map.k.a",
       "Invalid value: \"string\": spec.map.k.a in body must be of type integer: \"string\""}}},
    {"an embedded resource with its TypeMeta",
     SPEC("'template':{'type':'object','x-kubernetes-embedded-resource':true,"
          "'properties':{'spec':{'type':'object'}}}"),
     "{'spec':{'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},"
     "'spec':{}}}}",
     VALID},
    {"date past the end of its month",
     SPEC("'d':{'type':'string','format':'date'}"),
     "{'spec':{'d':'2024-02-30'}}",
     {{"FieldValueTypeInvalid", "spec.d",
       "Invalid value: \"2024-02-30\": spec.d in body must be of type date: \"2024-02-30\""}}},
    {"date-time on a day a year does not have",
     SPEC("'t':{'type':'string','format':'date-time'}"),
     "{'spec':{'t':'2023-02-29T00:00:00Z'}}",
     {{"FieldValueTypeInvalid", "spec.t",
       "Invalid value: \"2023-02-29T00:00:00Z\": spec.t in body must be of type date-time: "
       "\"2023-02-29T00:00:00Z\""}}},
    {"date-time with fractional seconds and an offset",
     SPEC("'t':{'type':'string','format':'date-time'}"),
     "{'spec':{'t':'2024-01-01T10:00:00.123+02:00'}}", VALID},
    {"uuid in upper case", SPEC("'u':{'type':'string','format':'uuid'}"),
     "{'spec':{'u':'123E4567-E89B-12D3-A456-426614174000'}}", VALID},
    {"uuid without dashes", SPEC("'u':{'type':'string','format':'uuid'}"),
     "{'spec':{'u':'123e4567e89b12d3a456426614174000'}}", VALID},
    {"cidr of IPv6", SPEC("'net':{'type':'string','format':'cidr'}"),
     "{'spec':{'net':'2001:db8::/32'}}", VALID},
    {"duration in days", SPEC("'dur':{'type':'string','format':'duration'}"),
     "{'spec':{'dur':'3d'}}", VALID},
    {"an integer past 2^53 above its maximum",
     SPEC("'n':{'type':'integer','maximum':9007199254740992}"),
     "{'spec':{'n':9007199254740993}}",
     {{"FieldValueInvalid", "spec.n",
       "Invalid value: 9007199254740993: spec.n in body should be less than or equal to "
       "9007199254740992"}}},
    {"a large integer prints whole",
     SPEC("'n':{'type':'integer','maximum':10}"),
     "{'spec':{'n':1000000000000000}}",
     {{"FieldValueInvalid", "spec.n",
       "Invalid value: 1000000000000000: spec.n in body should be less than or equal to 10"}}},
    {"a decimal multipleOf is exact", SPEC("'ratio':{'type':'number','multipleOf':0.1}"),
     "{'spec':{'ratio':0.3}}", VALID},
    {"enum matches a whole real", SPEC("'n':{'type':'number','enum':[1,2]}"), "{'spec':{'n':1.0}}",
     VALID},
    {"a required nullable property set to null",
     "{'type':'object','properties':{'spec':{'type':'object','required':['a'],"
     "'properties':{'a':{'type':'string','nullable':true}}}}}",
     "{'spec':{'a':null}}", VALID},
    {"pattern dot does not match a newline",
     SPEC("'s':{'type':'string','pattern':'^a.b$'}"),
     "{'spec':{'s':'a\\nb'}}",
     {{"FieldValueInvalid", "spec.s",
       "Invalid value: \"a\\nb\": spec.s in body should match '^a.b$'"}}},
    {"pattern anchors hold the whole string",
     SPEC("'s':{'type':'string','pattern':'^b$'}"),
     "{'spec':{'s':'a\\nb'}}",
     {{"FieldValueInvalid", "spec.s",
       "Invalid value: \"a\\nb\": spec.s in body should match '^b$'"}}},
    {"pattern dot is one rune", SPEC("'s':{'type':'string','pattern':'^.{3}$'}"),
     "{'spec':{'s':'h\xc3\xa9\xc3\xa9'}}", VALID},
    {"pattern with \\d in a bracket", SPEC("'s':{'type':'string','pattern':'^[\\\\d.]+$'}"),
     "{'spec':{'s':'1.2.3'}}", VALID},
    {"root metadata name constraint",
     "{'type':'object','properties':{'metadata':{'type':'object','properties':{'name':"
     "{'type':'string','maxLength':5}}}}}",
     "{'metadata':{'name':'toolong'}}",
     {{"FieldValueTooLong", "metadata.name", "Too long: may not be more than 5 bytes"}}},
    {"an embedded resource without TypeMeta",
     SPEC("'template':{'type':'object','x-kubernetes-embedded-resource':true,"
          "'properties':{'spec':{'type':'object'}}}"),
     "{'spec':{'template':{'spec':{}}}}",
     {{"FieldValueRequired", "spec.template.apiVersion", "Required value: must not be empty"},
      {"FieldValueRequired", "spec.template.kind", "Required value: must not be empty"}}},
    {"a status with its own schema",
     "{'type':'object','properties':{'status':{'type':'object','properties':{'ready':"
     "{'type':'boolean'}}}}}",
     "{'status':{'ready':'yes'}}",
     {{"FieldValueTypeInvalid", "status.ready",
       "Invalid value: \"string\": status.ready in body must be of type boolean: \"string\""}}},
};

/* Whether got (a cause object) is the wanted one. */
static bool cause_is(const json_t *got, const struct cause *want)
{
    const char *reason = str_member(got, "reason");
    const char *field = str_member(got, "field");
    const char *message = str_member(got, "message");
    return reason && field && message && strcmp(reason, want->reason) == 0 &&
           strcmp(field, want->field) == 0 && strcmp(message, want->message) == 0;
}

/* Runs one corpus case; returns true when the result is exactly the wanted one (the causes in
 * any order, each matched once), else prints what differs. */
static bool run_case(const struct vcase *c)
{
    size_t nwant = 0;
    while (nwant < MAX_WANT && c->want[nwant].reason)
        nwant++;
    sw_oas *s = compile(c->schema);
    json_t *obj = parse(c->object);
    json_t *causes = NULL;
    int rc = sw_oas_validate(s, obj, &causes);
    bool ok = true;
    if (nwant == 0) {
        ok = rc == 0;
    } else if (rc != SW_EINVALID || !json_is_array(causes) || json_array_size(causes) != nwant) {
        ok = false;
    } else {
        bool used[MAX_WANT] = {false};
        for (size_t i = 0; i < nwant && ok; i++) {
            const json_t *got = json_array_get(causes, i);
            bool found = false;
            for (size_t j = 0; j < nwant && !found; j++)
                if (!used[j] && cause_is(got, &c->want[j]))
                    used[j] = found = true;
            ok = found;
        }
    }
    if (!ok) {
        print_message("case \"%s\": rc %d\n  schema: %s\n  object: %s\n", c->name, rc, c->schema,
                      c->object);
        for (size_t i = 0; i < nwant; i++)
            print_message("  want: %s | %s | %s\n", c->want[i].reason, c->want[i].field,
                          c->want[i].message);
        if (nwant == 0)
            print_message("  want: valid\n");
        print_json("got", rc == 0 ? NULL : causes);
    }
    if (rc != 0)
        json_decref(causes);
    json_decref(obj);
    sw_oas_free(s);
    return ok;
}

static void test_corpus(void **state)
{
    size_t n = sizeof(corpus) / sizeof(corpus[0]);
    assert_true(n >= 60);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++)
        if (!run_case(&corpus[i]))
            failed++;
    if (failed)
        fail_msg("%zu of %zu corpus cases failed", failed, n);
}

/* ---- compile refusals ---- */

struct ccase {
    const char *name;
    const char *schema;
    const char *reason; /* NULL: any reason */
    const char *field;  /* ending in '*': a prefix */
    const char *phrase; /* the message contains it; NULL: not checked */
};

static const struct ccase refusals[] = {
    {"a property without type", "{'type':'object','properties':{'spec':{'properties':{}}}}",
     "FieldValueRequired", "schema.properties[spec].type",
     "must not be empty for specified object fields"},
    {"a root without type", "{'properties':{'spec':{'type':'object'}}}", "FieldValueRequired",
     "schema.type", "must not be empty at the root"},
    {"array items without type",
     "{'type':'object','properties':{'spec':{'type':'array','items':{}}}}", "FieldValueRequired",
     "schema.properties[spec].items.type", "must not be empty for specified array items"},
    {"a root that is not an object", "{'type':'string'}", "FieldValueInvalid", "schema.type",
     "must be object at the root"},
    {"an array without items", "{'type':'object','properties':{'x':{'type':'array'}}}",
     "FieldValueRequired", "schema.properties[x].items", "must be specified"},
    {"$ref", "{'type':'object','properties':{'spec':{'type':'object','$ref':'#/x'}}}",
     "FieldValueForbidden", "schema.properties[spec].$ref", NULL},
    {"id", "{'type':'object','properties':{'spec':{'type':'object','id':'x'}}}",
     "FieldValueForbidden", "schema.properties[spec].id", NULL},
    {"definitions", "{'type':'object','definitions':{'a':{'type':'string'}}}",
     "FieldValueForbidden", "schema.definitions", NULL},
    {"dependencies",
     "{'type':'object','properties':{'spec':{'type':'object','dependencies':{'a':['b']}}}}",
     "FieldValueForbidden", "schema.properties[spec].dependencies", NULL},
    {"patternProperties",
     "{'type':'object','properties':{'spec':{'type':'object',"
     "'patternProperties':{'^a':{'type':'string'}}}}}",
     "FieldValueForbidden", "schema.properties[spec].patternProperties", NULL},
    {"additionalItems",
     "{'type':'object','properties':{'spec':{'type':'array','items':{'type':'string'},"
     "'additionalItems':false}}}",
     "FieldValueForbidden", "schema.properties[spec].additionalItems", NULL},
    {"uniqueItems true",
     "{'type':'object','properties':{'spec':{'type':'array','items':{'type':'string'},"
     "'uniqueItems':true}}}",
     "FieldValueForbidden", "schema.properties[spec].uniqueItems", NULL},
    {"preserve-unknown-fields false",
     "{'type':'object','properties':{'spec':{'type':'object',"
     "'x-kubernetes-preserve-unknown-fields':false}}}",
     "FieldValueInvalid", "schema.properties[spec].x-kubernetes-preserve-unknown-fields", NULL},
    {"an unknown type word", "{'type':'object','properties':{'spec':{'type':'str'}}}",
     "FieldValueNotSupported", "schema.properties[spec].type", "\"str\""},
    {"type null", "{'type':'object','properties':{'spec':{'type':'null'}}}", NULL,
     "schema.properties[spec].type", NULL},
    {"a default that does not validate", SPEC("'n':{'type':'integer','maximum':5,'default':10}"),
     "FieldValueInvalid", "schema.properties[spec].properties[n].default",
     "less than or equal to 5"},
    {"a default of the wrong type", SPEC("'n':{'type':'integer','default':'x'}"),
     "FieldValueInvalid", "schema.properties[spec].properties[n].default", "integer"},
    {"a default with an unknown field",
     "{'type':'object','properties':{'spec':{'type':'object','default':{'a':1,'zz':2},"
     "'properties':{'a':{'type':'integer'}}}}}",
     "FieldValueInvalid", "schema.properties[spec].default", "unknown field"},
    {"a bad pattern", SPEC("'s':{'type':'string','pattern':'(a'}"), "FieldValueInvalid",
     "schema.properties[spec].properties[s].pattern", NULL},
    {"a pattern beyond POSIX (lookahead)", SPEC("'s':{'type':'string','pattern':'a(?=b)'}"),
     "FieldValueInvalid", "schema.properties[spec].properties[s].pattern", NULL},
    {"properties beside additionalProperties",
     SPEC("'m':{'type':'object','properties':{'a':{'type':'string'}},"
          "'additionalProperties':{'type':'string'}}"),
     "FieldValueForbidden", "schema.properties[spec].properties[m].additionalProperties", NULL},
    {"additionalProperties at the root",
     "{'type':'object','additionalProperties':{'type':'string'}}", "FieldValueForbidden",
     "schema.additionalProperties", NULL},
    {"a type inside anyOf", SPEC("'n':{'type':'integer','anyOf':[{'type':'integer','maximum':3}]}"),
     "FieldValueForbidden", "schema.properties[spec].properties[n].anyOf[0].type",
     "to be structural"},
    {"a default inside allOf", SPEC("'n':{'type':'integer','allOf':[{'default':3}]}"),
     "FieldValueForbidden", "schema.properties[spec].properties[n].allOf[0].default",
     "to be structural"},
    {"a junctor property missing from the main schema",
     "{'type':'object','properties':{'spec':{'type':'object',"
     "'anyOf':[{'properties':{'a':{'minimum':1}}}]}}}",
     "FieldValueRequired", "schema.properties[spec].properties[a]", "because it is defined in"},
    {"a description inside anyOf",
     SPEC("'n':{'type':'integer','anyOf':[{'description':'small','maximum':3}]}"),
     "FieldValueForbidden", "schema.properties[spec].properties[n].anyOf[0].description",
     "to be structural"},
    {"a title inside oneOf", SPEC("'n':{'type':'integer','oneOf':[{'title':'t','maximum':3}]}"),
     "FieldValueForbidden", "schema.properties[spec].properties[n].oneOf[0].title",
     "to be structural"},
    {"nullable inside not", SPEC("'n':{'type':'integer','not':{'nullable':true}}"),
     "FieldValueForbidden", "schema.properties[spec].properties[n].not.nullable",
     "to be structural"},
    {"a not property missing from the main schema",
     "{'type':'object','properties':{'spec':{'type':'object','properties':{'a':"
     "{'type':'integer'}},'not':{'properties':{'b':{'minimum':1}}}}}}",
     "FieldValueRequired", "schema.properties[spec].properties[b]", "because it is defined in"},
    {"a nested junctor property missing from the main schema",
     "{'type':'object','properties':{'spec':{'type':'object','properties':{'a':"
     "{'type':'object'}},'anyOf':[{'properties':{'a':{'properties':{'x':{'minimum':1}}}}}]}}}",
     "FieldValueRequired", "schema.properties[spec].properties[a].properties[x]",
     "because it is defined in"},
    {"metadata with other properties",
     "{'type':'object','properties':{'metadata':{'type':'object','properties':{'labels':"
     "{'type':'object'}}}}}",
     "FieldValueForbidden", "schema.properties[metadata]", "other than name and generateName"},
    {"metadata with required",
     "{'type':'object','properties':{'metadata':{'type':'object','required':['name']}}}",
     "FieldValueForbidden", "schema.properties[metadata]", "other than name and generateName"},
    {"a default on root metadata",
     "{'type':'object','properties':{'metadata':{'type':'object','default':{}}}}",
     "FieldValueForbidden", "schema.properties[metadata]*", NULL},
    {"a repeat count over 1000", SPEC("'s':{'type':'string','pattern':'^a{1001}$'}"),
     "FieldValueInvalid", "schema.properties[spec].properties[s].pattern", NULL},
    {"nested repeats over 1000", SPEC("'s':{'type':'string','pattern':'^(a{1,100}){1,100}$'}"),
     "FieldValueInvalid", "schema.properties[spec].properties[s].pattern", NULL},
    {"exclusiveMaximum as a number", SPEC("'n':{'type':'integer','exclusiveMaximum':5}"), NULL,
     "schema.properties[spec].properties[n].exclusiveMaximum", NULL},
    {"required that is not a list",
     "{'type':'object','required':'spec','properties':{'spec':{'type':'object'}}}", NULL,
     "schema.required", NULL},
    {"nullable that is not a boolean", SPEC("'s':{'type':'string','nullable':'true'}"), NULL,
     "schema.properties[spec].properties[s].nullable", NULL},
    {"a map list without keys",
     SPEC("'l':{'type':'array','x-kubernetes-list-type':'map','items':{'type':'object',"
          "'properties':{'name':{'type':'string'}}}}"),
     "FieldValueRequired", "schema.properties[spec].properties[l].x-kubernetes-list-map-keys",
     NULL},
    {"a map key neither required nor defaulted",
     SPEC("'l':{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':"
          "['name'],'items':{'type':'object','properties':{'name':{'type':'string'}}}}"),
     "FieldValueRequired", "schema.properties[spec].properties[l].items.properties[name]*", NULL},
    {"a map key that is not a property",
     SPEC("'l':{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':"
          "['id'],'items':{'type':'object','properties':{'name':{'type':'string'}}}}"),
     NULL, "schema.properties[spec].properties[l]*", NULL},
    {"a set of granular objects",
     SPEC("'l':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'object',"
          "'properties':{'name':{'type':'string'}}}}"),
     NULL, "schema.properties[spec].properties[l].items*", NULL},
    {"a list type on an object", SPEC("'o':{'type':'object','x-kubernetes-list-type':'set'}"), NULL,
     "schema.properties[spec].properties[o]*", NULL},
    {"an unknown list type",
     SPEC("'l':{'type':'array','x-kubernetes-list-type':'bag','items':{'type':'string'}}"),
     "FieldValueNotSupported", "schema.properties[spec].properties[l].x-kubernetes-list-type",
     "\"bag\""},
    {"int-or-string with a type", SPEC("'p':{'type':'string','x-kubernetes-int-or-string':true}"),
     NULL, "schema.properties[spec].properties[p]*", NULL},
    {"an embedded resource that is not an object",
     SPEC("'e':{'type':'string','x-kubernetes-embedded-resource':true}"), NULL,
     "schema.properties[spec].properties[e]*", NULL},
    {"an array as items", SPEC("'l':{'type':'array','items':[{'type':'string'}]}"),
     "FieldValueForbidden", "schema.properties[spec].properties[l].items", NULL},
};

static void test_refusals(void **state)
{
    size_t failed = 0;
    size_t n = sizeof(refusals) / sizeof(refusals[0]);
    for (size_t i = 0; i < n; i++) {
        const struct ccase *c = &refusals[i];
        json_t *schema = parse(c->schema);
        sw_oas *s = NULL;
        json_t *causes = NULL;
        int rc = sw_oas_compile(schema, "schema", false, &s, &causes);
        const json_t *first = json_array_get(causes, 0);
        bool ok = rc == SW_EINVALID && s == NULL && json_is_array(causes) && first;
        if (ok) {
            const char *reason = str_member(first, "reason");
            const char *field = str_member(first, "field");
            const char *message = str_member(first, "message");
            size_t flen = strlen(c->field);
            bool prefix = flen && c->field[flen - 1] == '*';
            ok =
                reason && field && message && (!c->reason || strcmp(reason, c->reason) == 0) &&
                (prefix ? strncmp(field, c->field, flen - 1) == 0 : strcmp(field, c->field) == 0) &&
                (!c->phrase || strstr(message, c->phrase));
        }
        if (!ok) {
            failed++;
            print_message("refusal \"%s\": rc %d\n  schema: %s\n  want: %s | %s | ...%s...\n",
                          c->name, rc, c->schema, c->reason ? c->reason : "(any)", c->field,
                          c->phrase ? c->phrase : "");
            print_json("got", causes);
        }
        if (rc == 0)
            sw_oas_free(s);
        else
            json_decref(causes);
        json_decref(schema);
    }
    if (failed)
        fail_msg("%zu of %zu refusal cases failed", failed, n);
}

/* Schemas at the edge of the rules that compile. */
static void test_accepted(void **state)
{
    const char *good[] = {
        "{'type':'object'}",
        "{'type':'object','properties':{'apiVersion':{'type':'string'},'kind':{'type':'string'},"
        "'metadata':{'type':'object'},'spec':{'type':'object','required':['cronSpec'],"
        "'properties':{'cronSpec':{'type':'string','pattern':'^(\\\\d+|\\\\*)(/\\\\d+)?(\\\\s+"
        "(\\\\d+|\\\\*)(/\\\\d+)?){4}$'},'image':{'type':'string'},'replicas':{'type':'integer',"
        "'minimum':1,'maximum':10,'default':1}}},'status':{'type':'object',"
        "'properties':{'replicas':{'type':'integer'}}}}}",
        SPEC("'port':{'x-kubernetes-int-or-string':true}"),
        SPEC("'port':{'x-kubernetes-int-or-string':true,'anyOf':[{'type':'integer'},"
             "{'type':'string'}]}"),
        SPEC("'port':{'x-kubernetes-int-or-string':true,'allOf':[{'anyOf':[{'type':'integer'},"
             "{'type':'string'}]}]}"),
        SPEC("'any':{'x-kubernetes-preserve-unknown-fields':true}"),
        SPEC("'l':{'type':'array','items':{'type':'string'},'uniqueItems':false}"),
        SPEC("'m':{'type':'object','properties':{'a':{'type':'string'}},"
             "'additionalProperties':true}"),
        SPEC("'c':{'type':'string','format':'color'}"),
        SPEC("'n':{'type':'integer','anyOf':[{'maximum':3},{'minimum':9}]}"),
        ("{'type':'object','properties':{'spec':{'type':'object','properties':{'a':"
         "{'type':'integer'}},'anyOf':[{'required':['a']},{'properties':{'a':{'minimum':1}}}]}}}"),
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        sw_oas *s = compile(good[i]);
        sw_oas_free(s);
    }
    /* the field prefix given is the one used in causes */
    json_t *schema = parse("{'type':'object','properties':{'spec':{'properties':{}}}}");
    sw_oas *s = NULL;
    json_t *causes = NULL;
    assert_int_equal(sw_oas_compile(schema, "spec.validation.openAPIV3Schema", false, &s, &causes),
                     SW_EINVALID);
    assert_string_equal(str_member(json_array_get(causes, 0), "field"),
                        "spec.validation.openAPIV3Schema.properties[spec].type");
    json_decref(causes);
    json_decref(schema);
    /* with a status subresource the same schemas compile */
    schema = parse(SPEC("'a':{'type':'string'}"));
    causes = NULL;
    assert_int_equal(sw_oas_compile(schema, "schema", true, &s, &causes), 0);
    sw_oas_free(s);
    json_decref(schema);
}

/* With a status subresource the root schema may hold only type, description, title, format,
 * the numeric, length and items limits, pattern, uniqueItems, multipleOf, required, items,
 * properties, externalDocs, example and preserve-unknown-fields (crd-gc.md 1.2). */
static void test_status_root(void **state)
{
    const char *roots[] = {
        "{'type':'object','anyOf':[{'required':['spec']}],'properties':{'spec':{'type':'object'}}}",
        "{'type':'object','nullable':true,'properties':{'spec':{'type':'object'}}}",
        "{'type':'object','enum':[{}],'properties':{'spec':{'type':'object'}}}",
    };
    size_t failed = 0;
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        sw_oas *s = compile(roots[i]); /* fine without /status */
        sw_oas_free(s);
        json_t *schema = parse(roots[i]);
        json_t *causes = NULL;
        s = NULL;
        int rc = sw_oas_compile(schema, "schema", true, &s, &causes);
        const json_t *first = json_array_get(causes, 0);
        if (rc != SW_EINVALID || !sw_str_eq(str_member(first, "field"), "schema") ||
            !sw_str_eq(str_member(first, "reason"), "FieldValueInvalid")) {
            failed++;
            print_message("with /status, compile %d of %s\n", rc, roots[i]);
            print_json("causes", causes);
        }
        if (rc == 0)
            sw_oas_free(s);
        else
            json_decref(causes);
        json_decref(schema);
    }
    /* what is allowed compiles */
    json_t *schema = parse("{'type':'object','description':'d','required':['spec'],"
                           "'x-kubernetes-preserve-unknown-fields':true,"
                           "'properties':{'spec':{'type':'object'},'status':{'type':'object'}}}");
    sw_oas *s = NULL;
    json_t *causes = NULL;
    assert_int_equal(sw_oas_compile(schema, "schema", true, &s, &causes), 0);
    sw_oas_free(s);
    json_decref(schema);
    if (failed)
        fail_msg("%zu root schemas compiled with a status subresource", failed);
}

/* sw_oas_source is the schema as written, kept as a copy. */
static void test_source(void **state)
{
    json_t *schema = parse(SPEC("'replicas':{'type':'integer','default':1,'description':'n'}"));
    json_t *orig = json_deep_copy(schema);
    sw_oas *s = NULL;
    json_t *causes = NULL;
    assert_int_equal(sw_oas_compile(schema, "schema", false, &s, &causes), 0);
    json_object_set_new(schema, "x-changed", json_true());
    json_decref(schema);
    assert_true(json_equal((json_t *)sw_oas_source(s), orig));
    /* defaulting does not change the source */
    json_t *obj = parse("{'spec':{}}");
    sw_oas_default(s, obj);
    json_integer_set(json_object_get(json_object_get(obj, "spec"), "replicas"), 99);
    assert_true(json_equal((json_t *)sw_oas_source(s), orig));
    json_decref(obj);
    json_decref(orig);
    sw_oas_free(s);
    sw_oas_free(NULL);
}

/* ---- pruning ---- */

/* Whether the array holds exactly the strings of want (in any order). */
static bool same_paths(const json_t *got, const char *const *want, size_t n)
{
    if (!json_is_array(got) || json_array_size(got) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found = json_is_string(json_array_get(got, j)) &&
                    strcmp(json_string_value(json_array_get(got, j)), want[i]) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* Whether got equals the test text want_text; prints both when not. */
static bool same_json(const char *what, const json_t *got, const char *want_text)
{
    json_t *want = parse(want_text);
    bool same = json_equal((json_t *)got, want);
    if (!same) {
        print_message("%s differs\n", what);
        print_json("want", want);
        print_json("got", got);
    }
    json_decref(want);
    return same;
}

static void expect_json(const char *what, const json_t *got, const char *want_text)
{
    if (!same_json(what, got, want_text))
        fail_msg("%s differs", what);
}

static const char prune_schema[] =
    "{'type':'object','properties':{"
    "'spec':{'type':'object','properties':{"
    "'replicas':{'type':'integer'},"
    "'items':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'}}}},"
    "'free':{'type':'object','x-kubernetes-preserve-unknown-fields':true,'properties':{"
    "'known':{'type':'object','properties':{'a':{'type':'integer'}}}}},"
    "'template':{'type':'object','x-kubernetes-embedded-resource':true,'properties':{"
    "'spec':{'type':'object','properties':{'image':{'type':'string'}}}}},"
    "'map':{'type':'object','additionalProperties':{'type':'object','properties':{"
    "'a':{'type':'integer'}}}},"
    "'any':{'type':'object','additionalProperties':true},"
    "'port':{'x-kubernetes-int-or-string':true}}},"
    "'status':{'type':'object','properties':{'ready':{'type':'boolean'}}}}}";

static void test_prune(void **state)
{
    sw_oas *s = compile(prune_schema);
    json_t *obj =
        parse("{'apiVersion':'stable.example.com/v1','kind':'CronTab',"
              "'metadata':{'name':'n','labels':{'a':'b'}},'extra':1,"
              "'spec':{'replicas':1,'foo':2,'items':[{'name':'a','bar':1},{'name':'b'}],"
              "'free':{'x':{'y':1},'known':{'a':1,'b':2}},"
              "'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'junk':1,"
              "'spec':{'image':'i','other':1}},"
              "'map':{'k1':{'a':1,'z':2},'k2':{}},'any':{'p':1,'q':'x'},'port':'80%'},"
              "'status':{'ready':true,'phase':'x'}}");
    json_t *unknown = json_array();
    sw_oas_prune(s, obj, unknown);
    expect_json("pruned object", obj,
                "{'apiVersion':'stable.example.com/v1','kind':'CronTab',"
                "'metadata':{'name':'n','labels':{'a':'b'}},"
                "'spec':{'replicas':1,'items':[{'name':'a'},{'name':'b'}],"
                "'free':{'x':{'y':1},'known':{'a':1}},"
                "'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},"
                "'spec':{'image':'i'}},"
                "'map':{'k1':{'a':1},'k2':{}},'any':{'p':1,'q':'x'},'port':'80%'},"
                "'status':{'ready':true}}");
    const char *want[] = {"extra",
                          "spec.foo",
                          "spec.items[0].bar",
                          "spec.free.known.b",
                          "spec.template.junk",
                          "spec.template.spec.other",
                          "spec.map.k1.z",
                          "status.phase"};
    if (!same_paths(unknown, want, sizeof(want) / sizeof(want[0]))) {
        print_json("unknown", unknown);
        fail_msg("unknown field paths differ");
    }
    json_decref(unknown);
    json_decref(obj);

    /* no array for the paths; a value of the wrong type is left for validation */
    obj = parse("{'spec':{'items':'x','map':[1],'free':7,'zz':{}},'status':null}");
    sw_oas_prune(s, obj, NULL);
    expect_json("pruned mistyped object", obj,
                "{'spec':{'items':'x','map':[1],'free':7},'status':null}");
    json_decref(obj);

    /* an item that is not an object, and an empty object */
    obj = parse("{'spec':{'items':[1,null,{'name':'x','y':{}}]}}");
    unknown = json_array();
    sw_oas_prune(s, obj, unknown);
    expect_json("pruned items", obj, "{'spec':{'items':[1,null,{'name':'x'}]}}");
    const char *want2[] = {"spec.items[2].y"};
    assert_true(same_paths(unknown, want2, 1));
    json_decref(unknown);
    json_decref(obj);
    sw_oas_free(s);

    /* a schema with no properties at all keeps only TypeMeta and ObjectMeta */
    s = compile("{'type':'object'}");
    obj = parse("{'apiVersion':'v','kind':'K','metadata':{'name':'x'},'spec':{'a':1}}");
    unknown = json_array();
    sw_oas_prune(s, obj, unknown);
    expect_json("pruned to TypeMeta", obj, "{'apiVersion':'v','kind':'K','metadata':{'name':'x'}}");
    const char *want3[] = {"spec"};
    assert_true(same_paths(unknown, want3, 1));
    json_decref(unknown);
    json_decref(obj);
    sw_oas_free(s);

    /* apiVersion/kind/metadata are kept only at the root and in embedded resources */
    s = compile(SPEC("'plain':{'type':'object','properties':{'a':{'type':'string'}}}"));
    obj = parse("{'spec':{'plain':{'apiVersion':'v1','kind':'K','metadata':{},'a':'x'}}}");
    unknown = json_array();
    sw_oas_prune(s, obj, unknown);
    expect_json("pruned non-embedded", obj, "{'spec':{'plain':{'a':'x'}}}");
    const char *want4[] = {"spec.plain.apiVersion", "spec.plain.kind", "spec.plain.metadata"};
    if (!same_paths(unknown, want4, 3)) {
        print_json("unknown", unknown);
        fail_msg("unknown field paths differ (non-embedded)");
    }
    json_decref(unknown);
    json_decref(obj);
    sw_oas_free(s);

    /* preserve-unknown-fields at the root */
    s = compile("{'type':'object','x-kubernetes-preserve-unknown-fields':true,'properties':{"
                "'spec':{'type':'object','properties':{'a':{'type':'string'}}}}}");
    obj = parse("{'x':{'y':[1]},'spec':{'a':'1','b':2}}");
    unknown = json_array();
    sw_oas_prune(s, obj, unknown);
    expect_json("pruned under root preserve", obj, "{'x':{'y':[1]},'spec':{'a':'1'}}");
    const char *want5[] = {"spec.b"};
    assert_true(same_paths(unknown, want5, 1));
    json_decref(unknown);
    json_decref(obj);
    sw_oas_free(s);
}

/* additionalProperties: true has no schema for the values: their own fields are unknown (only
 * x-kubernetes-preserve-unknown-fields keeps them), scalar values stay. */
static void test_prune_additional_true(void **state)
{
    sw_oas *s = compile(SPEC("'any':{'type':'object','additionalProperties':true}"));
    json_t *obj = parse("{'spec':{'any':{'p':1,'deep':{'er':1}}}}");
    json_t *unknown = json_array();
    sw_oas_prune(s, obj, unknown);
    const char *want[] = {"spec.any.deep.er"};
    bool paths = same_paths(unknown, want, 1);
    if (!paths)
        print_json("unknown", unknown);
    json_decref(unknown);
    sw_oas_free(s);
    bool pruned =
        same_json("pruned additionalProperties true", obj, "{'spec':{'any':{'p':1,'deep':{}}}}");
    json_decref(obj);
    assert_true(pruned);
    assert_true(paths);
}

/* ---- defaulting ---- */

static const char default_schema[] =
    "{'type':'object','properties':{'spec':{'type':'object','default':{},'properties':{"
    "'replicas':{'type':'integer','default':1},"
    "'image':{'type':'string'},"
    "'mode':{'type':'string','nullable':true},"
    "'tier':{'type':'string','nullable':true,'default':'gold'},"
    "'ports':{'type':'array','items':{'type':'object','properties':{"
    "'port':{'type':'integer','default':80},'name':{'type':'string'}}}},"
    "'env':{'type':'object','additionalProperties':{'type':'object','properties':{"
    "'v':{'type':'string','default':'x'}}}},"
    "'res':{'type':'object','properties':{'cpu':{'type':'string','default':'1'}}},"
    "'tmpl':{'type':'object','default':{'name':'t'},'properties':{"
    "'name':{'type':'string'},'size':{'type':'integer','default':3}}}}}}}";

/* Defaults the object text and compares it with want. */
static void check_default(const sw_oas *s, const char *what, const char *in, const char *want)
{
    json_t *obj = parse(in);
    sw_oas_default(s, obj);
    expect_json(what, obj, want);
    json_decref(obj);
}

static void test_default(void **state)
{
    sw_oas *s = compile(default_schema);
    /* an absent parent with a default is set, then its own defaults fill it; an absent parent
     * without a default (res) stays absent; a nullable property without default stays absent */
    check_default(s, "empty object", "{}",
                  "{'spec':{'replicas':1,'tier':'gold','tmpl':{'name':'t','size':3}}}");
    /* non-nullable nulls: the default, else removed; nullable nulls kept, default or not */
    check_default(s, "nulls", "{'spec':{'replicas':null,'image':null,'mode':null,'tier':null}}",
                  "{'spec':{'replicas':1,'mode':null,'tier':null,"
                  "'tmpl':{'name':'t','size':3}}}");
    /* a non-nullable null parent takes its default, which is then filled */
    check_default(s, "null spec", "{'spec':null}",
                  "{'spec':{'replicas':1,'tier':'gold','tmpl':{'name':'t','size':3}}}");
    /* a present parent without a default gets its children's defaults */
    check_default(s, "present parent", "{'spec':{'res':{},'replicas':2}}",
                  "{'spec':{'res':{'cpu':'1'},'replicas':2,'tier':'gold',"
                  "'tmpl':{'name':'t','size':3}}}");
    /* defaults inside array items and additionalProperties values; present values kept */
    check_default(s, "items and map values",
                  "{'spec':{'ports':[{'name':'a'},{'port':8080}],'env':{'A':{},'B':{'v':'y'}},"
                  "'tmpl':{'size':0}}}",
                  "{'spec':{'ports':[{'name':'a','port':80},{'port':8080}],"
                  "'env':{'A':{'v':'x'},'B':{'v':'y'}},'tmpl':{'size':0},'replicas':1,"
                  "'tier':'gold'}}");
    /* each object gets its own copy of a default */
    json_t *a = parse("{}");
    json_t *b = parse("{}");
    sw_oas_default(s, a);
    json_object_set_new(json_object_get(json_object_get(a, "spec"), "tmpl"), "name",
                        json_string("changed"));
    sw_oas_default(s, b);
    expect_json("second object", b,
                "{'spec':{'replicas':1,'tier':'gold','tmpl':{'name':'t','size':3}}}");
    json_decref(a);
    json_decref(b);
    sw_oas_free(s);

    /* a null item with an items default, and a null map value with a default */
    s = compile(SPEC("'l':{'type':'array','items':{'type':'integer','default':7}},"
                     "'m':{'type':'object','additionalProperties':{'type':'string',"
                     "'default':'d'}}"));
    check_default(s, "null item and map value", "{'spec':{'l':[1,null],'m':{'k':null}}}",
                  "{'spec':{'l':[1,7],'m':{'k':'d'}}}");
    sw_oas_free(s);
}

/* sw_oas_has_defaults: whether any schema of the tree, however deep, has a default. */
static void test_has_defaults(void **state)
{
    const char *with[] = {
        default_schema,
        SPEC("'l':{'type':'array','items':{'type':'object','properties':{'p':{'type':'integer',"
             "'default':1}}}}"),
        SPEC("'m':{'type':'object','additionalProperties':{'type':'string','default':'d'}}"),
        SPEC("'n':{'type':'string','nullable':true,'default':'x'}"),
    };
    for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++) {
        sw_oas *s = compile(with[i]);
        if (!sw_oas_has_defaults(s)) {
            sw_oas_free(s);
            fail_msg("no defaults found in %s", with[i]);
        }
        sw_oas_free(s);
    }
    sw_oas *s =
        compile(SPEC("'a':{'type':'string'},'l':{'type':'array','items':{'type':'integer'}},"
                     "'n':{'type':'integer','anyOf':[{'maximum':3}]}"));
    assert_false(sw_oas_has_defaults(s));
    sw_oas_free(s);
}

/* prune -> default -> validate, the way a write runs them */
static int pipeline(const sw_oas *s, json_t *obj, json_t *unknown, json_t **causes)
{
    sw_oas_prune(s, obj, unknown);
    sw_oas_default(s, obj);
    return sw_oas_validate(s, obj, causes);
}

static void test_order(void **state)
{
    sw_oas *s = compile("{'type':'object','properties':{'spec':{'type':'object','default':{},"
                        "'properties':{'replicas':{'type':'integer','default':1,'maximum':5},"
                        "'image':{'type':'string','minLength':1}}}}}");
    /* unknown fields go before defaulting, and a default replaces a null before validation */
    json_t *obj = parse("{'junk':1,'spec':{'replica':7,'foo':'x','replicas':null}}");
    json_t *unknown = json_array();
    json_t *causes = NULL;
    assert_int_equal(pipeline(s, obj, unknown, &causes), 0);
    expect_json("after the pipeline", obj, "{'spec':{'replicas':1}}");
    const char *want[] = {"junk", "spec.replica", "spec.foo"};
    assert_true(same_paths(unknown, want, 3));
    json_decref(unknown);
    json_decref(obj);

    /* a non-nullable null without default is dropped, so it does not fail validation */
    obj = parse("{'spec':{'image':null}}");
    assert_int_equal(pipeline(s, obj, NULL, &causes), 0);
    expect_json("dropped null", obj, "{'spec':{'replicas':1}}");
    json_decref(obj);

    /* a present value is validated */
    obj = parse("{'spec':{'replicas':9}}");
    assert_int_equal(pipeline(s, obj, NULL, &causes), SW_EINVALID);
    assert_int_equal(json_array_size(causes), 1);
    assert_string_equal(str_member(json_array_get(causes, 0), "field"), "spec.replicas");
    assert_string_equal(
        str_member(json_array_get(causes, 0), "message"),
        "Invalid value: 9: spec.replicas in body should be less than or equal to 5");
    json_decref(causes);
    json_decref(obj);
    sw_oas_free(s);

    /* a default cannot bring back a field that pruning removes: such a default is refused */
    json_t *schema = parse("{'type':'object','properties':{'spec':{'type':'object',"
                           "'default':{'replicas':1,'gone':true},"
                           "'properties':{'replicas':{'type':'integer'}}}}}");
    sw_oas *bad = NULL;
    causes = NULL;
    assert_int_equal(sw_oas_compile(schema, "schema", false, &bad, &causes), SW_EINVALID);
    assert_null(bad);
    assert_string_equal(str_member(json_array_get(causes, 0), "field"),
                        "schema.properties[spec].default");
    json_decref(causes);
    json_decref(schema);

    /* under preserve-unknown-fields the same default is kept whole */
    s = compile("{'type':'object','properties':{'spec':{'type':'object',"
                "'x-kubernetes-preserve-unknown-fields':true,'default':{'replicas':1,'kept':true},"
                "'properties':{'replicas':{'type':'integer'}}}}}");
    obj = parse("{}");
    assert_int_equal(pipeline(s, obj, NULL, &causes), 0);
    expect_json("preserved default", obj, "{'spec':{'replicas':1,'kept':true}}");
    json_decref(obj);
    sw_oas_free(s);
}

/* int-or-string through the whole pipeline */
static void test_int_or_string(void **state)
{
    sw_oas *s = compile(SPEC("'port':{'x-kubernetes-int-or-string':true,'default':8080},"
                             "'target':{'x-kubernetes-int-or-string':true,'anyOf':["
                             "{'type':'integer'},{'type':'string'}]}"));
    json_t *obj = parse("{'spec':{}}");
    json_t *causes = NULL;
    assert_int_equal(pipeline(s, obj, NULL, &causes), 0);
    expect_json("defaulted int-or-string", obj, "{'spec':{'port':8080}}");
    json_decref(obj);
    obj = parse("{'spec':{'port':'http','target':'50%'}}");
    assert_int_equal(pipeline(s, obj, NULL, &causes), 0);
    json_decref(obj);
    obj = parse("{'spec':{'port':{'a':1},'target':[1]}}");
    assert_int_equal(pipeline(s, obj, NULL, &causes), SW_EINVALID);
    assert_true(json_array_size(causes) >= 2);
    bool port = false, target = false;
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c)
    {
        const char *f = str_member(c, "field");
        port = port || (f && strcmp(f, "spec.port") == 0 &&
                        strcmp(str_member(c, "reason"), "FieldValueTypeInvalid") == 0);
        target = target || (f && strcmp(f, "spec.target") == 0);
    }
    assert_true(port);
    assert_true(target);
    json_decref(causes);
    json_decref(obj);
    /* int-or-string values are not pruned into */
    obj = parse("{'spec':{'port':'x'}}");
    json_t *unknown = json_array();
    sw_oas_prune(s, obj, unknown);
    assert_int_equal(json_array_size(unknown), 0);
    json_decref(unknown);
    json_decref(obj);
    sw_oas_free(s);
}

/* nullable through the whole pipeline */
static void test_nullable(void **state)
{
    sw_oas *s = compile(SPEC("'o':{'type':'object','nullable':true,'properties':{"
                             "'a':{'type':'integer','default':1}}},"
                             "'l':{'type':'array','nullable':true,'items':{'type':'string'}},"
                             "'n':{'type':'integer','minimum':3}"));
    json_t *obj = parse("{'spec':{'o':null,'l':null,'n':null}}");
    json_t *causes = NULL;
    assert_int_equal(pipeline(s, obj, NULL, &causes), 0);
    expect_json("nullable nulls", obj, "{'spec':{'o':null,'l':null}}");
    json_decref(obj);
    /* without the defaulting step, the non-nullable null is a type error */
    obj = parse("{'spec':{'o':null,'n':null}}");
    assert_int_equal(sw_oas_validate(s, obj, &causes), SW_EINVALID);
    assert_int_equal(json_array_size(causes), 1);
    assert_string_equal(str_member(json_array_get(causes, 0), "field"), "spec.n");
    assert_string_equal(
        str_member(json_array_get(causes, 0), "message"),
        "Invalid value: \"null\": spec.n in body must be of type integer: \"null\"");
    json_decref(causes);
    json_decref(obj);
    sw_oas_free(s);
}

/* Sets compare whole items, map lists their keys, as values: key order inside an object and
 * 1 against 1.0 do not make two items different. */
static void test_list_equality(void **state)
{
    sw_oas *s = compile(SPEC("'l':{'type':'array','x-kubernetes-list-type':'set','items':{"
                             "'type':'object','x-kubernetes-map-type':'atomic','properties':{"
                             "'a':{'type':'integer'},'b':{'type':'integer'}}}}"));
    json_t *obj = parse("{'spec':{'l':[{'a':1,'b':2},{'b':2,'a':1},{'a':2,'b':1}]}}");
    json_t *causes = NULL;
    int rc = sw_oas_validate(s, obj, &causes);
    if (rc != SW_EINVALID || json_array_size(causes) != 1) {
        print_json("causes", rc ? causes : NULL);
        if (rc)
            json_decref(causes);
        json_decref(obj);
        sw_oas_free(s);
        fail_msg("a set item equal but for key order was not reported");
    }
    const json_t *c = json_array_get(causes, 0);
    assert_string_equal(str_member(c, "reason"), "FieldValueDuplicate");
    assert_string_equal(str_member(c, "field"), "spec.l[1]");
    assert_true(strncmp(str_member(c, "message"), "Duplicate value: {", 18) == 0);
    json_decref(causes);
    json_decref(obj);
    sw_oas_free(s);
}

/* Counts a mismatch of got against want, printing both (a NULL got is a mismatch). */
static void soft_equal(const char *what, const char *got, const char *want, size_t *failed)
{
    if (got && strcmp(got, want) == 0)
        return;
    (*failed)++;
    print_message("%s:\n  want: %s\n  got:  %s\n", what, want, got ? got : "(none)");
}

/* The first cause's member of a validation expected to fail, or NULL. */
static char *first_cause(const sw_oas *s, const json_t *obj, const char *member)
{
    json_t *causes = NULL;
    if (sw_oas_validate(s, obj, &causes) == 0)
        return NULL;
    const char *v = str_member(json_array_get(causes, 0), member);
    char *copy = v ? sw_strdup(v) : NULL;
    json_decref(causes);
    return copy;
}

/* Values, paths and patterns are reported whole however long they are. */
static void test_long_values(void **state)
{
    size_t failed = 0;
    sw_oas *s = compile(SPEC("'s':{'type':'string','pattern':'^a'},"
                             "'m':{'type':'object','additionalProperties':{'type':'string'}}"));
    /* a 300-byte value in the message */
    char *value = sw_malloc(301);
    memset(value, 'b', 300);
    value[300] = '\0';
    json_t *obj = json_pack("{s:{s:s}}", "spec", "s", value);
    char want[512];
    snprintf(want, sizeof(want), "Invalid value: \"%s\": spec.s in body should match '^a'", value);
    char *got = first_cause(s, obj, "message");
    soft_equal("a 300-byte value", got, want, &failed);
    sw_free(got);
    json_decref(obj);
    sw_free(value);

    /* a 3000-byte map key in the field path of a cause and of an unknown field */
    char *key = sw_malloc(3001);
    memset(key, 'k', 3000);
    key[3000] = '\0';
    char *field = sw_malloc(3100);
    obj = json_pack("{s:{s:{s:i}}}", "spec", "m", key, 1);
    snprintf(field, 3100, "spec.m.%s", key);
    got = first_cause(s, obj, "field");
    soft_equal("a 3000-byte key in a cause", got, field, &failed);
    sw_free(got);
    json_decref(obj);
    obj = json_pack("{s:{s:i}}", "spec", key, 1);
    json_t *unknown = json_array();
    sw_oas_prune(s, obj, unknown);
    snprintf(field, 3100, "spec.%s", key);
    soft_equal("a 3000-byte key in an unknown path",
               json_array_size(unknown) == 1 ? json_string_value(json_array_get(unknown, 0)) : NULL,
               field, &failed);
    json_decref(unknown);
    json_decref(obj);
    sw_free(field);
    sw_free(key);
    sw_oas_free(s);

    /* a pattern of SW_OAS_MAX_PATTERN bytes is quoted whole */
    char *pattern = sw_malloc(SW_OAS_MAX_PATTERN + 1);
    pattern[0] = '^';
    memset(pattern + 1, 'a', SW_OAS_MAX_PATTERN - 1);
    pattern[SW_OAS_MAX_PATTERN] = '\0';
    json_t *schema =
        json_pack("{s:s,s:{s:{s:s,s:{s:{s:s,s:s}}}}}", "type", "object", "properties", "spec",
                  "type", "object", "properties", "s", "type", "string", "pattern", pattern);
    json_t *causes = NULL;
    s = NULL;
    assert_int_equal(sw_oas_compile(schema, "schema", false, &s, &causes), 0);
    json_decref(schema);
    obj = parse("{'spec':{'s':'b'}}");
    size_t n = SW_OAS_MAX_PATTERN + 100;
    char *msg = sw_malloc(n);
    snprintf(msg, n, "Invalid value: \"b\": spec.s in body should match '%s'", pattern);
    got = first_cause(s, obj, "message");
    soft_equal("a pattern of the largest size", got, msg, &failed);
    sw_free(got);
    sw_free(msg);
    sw_free(pattern);
    json_decref(obj);
    sw_oas_free(s);
    if (failed)
        fail_msg("%zu long values were not reported whole", failed);
}

/* One compiled schema used from several threads at once gives every thread the same results. */
struct worker {
    const sw_oas *s;
    int mismatches;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 200; i++) {
        json_t *obj = NULL;
        const char *text = i % 2
                               ? "{\"spec\":{\"tier\":\"x\",\"foo\":1,\"ports\":[{\"name\":\"a\"}],"
                                 "\"when\":\"2024-01-01T00:00:00Z\"}}"
                               : "{\"spec\":{\"replicas\":99,\"when\":\"soon\",\"name\":\"-x\"}}";
        if (sw_json_parse(text, strlen(text), 64, 0, &obj) < 0) {
            w->mismatches++;
            continue;
        }
        sw_oas_prune(w->s, obj, NULL);
        sw_oas_default(w->s, obj);
        json_t *causes = NULL;
        int rc = sw_oas_validate(w->s, obj, &causes);
        if (i % 2) {
            const json_t *port = sw_json_at(obj, "spec.ports");
            if (rc != 0 || sw_json_int_or(json_array_get(port, 0), "port", 0) != 80 ||
                sw_json_int_or(obj, "spec.replicas", 0) != 1 || sw_json_at(obj, "spec.foo"))
                w->mismatches++;
        } else if (rc != SW_EINVALID || json_array_size(causes) != 3) {
            w->mismatches++;
        }
        if (rc)
            json_decref(causes);
        json_decref(obj);
    }
    return NULL;
}

static void test_threads(void **state)
{
    sw_oas *s = compile("{'type':'object','properties':{'spec':{'type':'object','properties':{"
                        "'replicas':{'type':'integer','default':1,'maximum':10},"
                        "'tier':{'type':'string','enum':['x','y']},"
                        "'when':{'type':'string','format':'date-time'},"
                        "'name':{'type':'string','pattern':'^[a-z][-a-z0-9]*$'},"
                        "'ports':{'type':'array','x-kubernetes-list-type':'map',"
                        "'x-kubernetes-list-map-keys':['port'],'items':{'type':'object',"
                        "'properties':{'port':{'type':'integer','default':80},"
                        "'name':{'type':'string'}}}}}}}}");
    pthread_t threads[4];
    struct worker workers[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (struct worker){.s = s, .mismatches = 0};
        assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    int mismatches = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        mismatches += workers[i].mismatches;
    }
    sw_oas_free(s);
    assert_int_equal(mismatches, 0);
}

/* ---- hostile schemas and objects ---- */

/* {'type':'object','properties':{'a': ... }} nested depth times around a string leaf. */
static json_t *nested_properties(int depth)
{
    json_t *node = json_pack("{s:s}", "type", "string");
    for (int i = 0; i < depth; i++)
        node = json_pack("{s:s,s:{s:o}}", "type", "object", "properties", "a", node);
    return node;
}

/* Whether compiling schema is refused with at least one well-formed cause; prints why not. */
static bool refused(json_t *schema, const char *what)
{
    sw_oas *s = NULL;
    json_t *causes = NULL;
    int rc = sw_oas_compile(schema, "schema", false, &s, &causes);
    if (rc != SW_EINVALID) {
        if (rc == 0)
            sw_oas_free(s);
        print_message("%s: compile returned %d, not SW_EINVALID\n", what, rc);
        return false;
    }
    const json_t *first = json_array_get(causes, 0);
    bool ok = s == NULL && first && str_member(first, "reason") && str_member(first, "field") &&
              str_member(first, "message");
    if (!ok) {
        print_message("%s: refused without a well-formed cause\n", what);
        print_json("causes", causes);
    }
    json_decref(causes);
    return ok;
}

static void expect_refused(json_t *schema, const char *what)
{
    if (!refused(schema, what)) {
        json_decref(schema);
        fail_msg("%s", what);
    }
}

static void test_hostile(void **state)
{
    /* 200 levels of properties, items, additionalProperties and allOf: refused, no crash */
    json_t *schema = nested_properties(200);
    expect_refused(schema, "200 nested properties");
    json_decref(schema);

    json_t *node = json_pack("{s:s}", "type", "string");
    for (int i = 0; i < 200; i++)
        node = json_pack("{s:s,s:o}", "type", "array", "items", node);
    schema = json_pack("{s:s,s:{s:o}}", "type", "object", "properties", "spec", node);
    expect_refused(schema, "200 nested items");
    json_decref(schema);

    node = json_pack("{s:s}", "type", "string");
    for (int i = 0; i < 200; i++)
        node = json_pack("{s:s,s:o}", "type", "object", "additionalProperties", node);
    schema = json_pack("{s:s,s:{s:o}}", "type", "object", "properties", "spec", node);
    expect_refused(schema, "200 nested additionalProperties");
    json_decref(schema);

    node = json_pack("{s:i}", "minimum", 1);
    for (int i = 0; i < 200; i++)
        node = json_pack("{s:[o]}", "allOf", node);
    json_object_set_new(node, "type", json_string("integer"));
    schema = json_pack("{s:s,s:{s:o}}", "type", "object", "properties", "spec", node);
    expect_refused(schema, "200 nested allOf");
    json_decref(schema);

    /* well inside the nesting cap: compiles, and the pipeline walks a matching object */
    schema = nested_properties(40);
    sw_oas *s = NULL;
    json_t *causes = NULL;
    assert_int_equal(sw_oas_compile(schema, "schema", false, &s, &causes), 0);
    json_decref(schema);
    json_t *obj = json_string("x");
    for (int i = 0; i < 40; i++)
        obj = json_pack("{s:o,s:i}", "a", obj, "zz", i);
    json_t *unknown = json_array();
    assert_int_equal(pipeline(s, obj, unknown, &causes), 0);
    assert_int_equal(json_array_size(unknown), 40);
    json_decref(unknown);
    json_decref(obj);
    /* an object far deeper than the schema: the extra depth is pruned away */
    obj = json_pack("{s:i}", "z", 1);
    for (int i = 0; i < 300; i++)
        obj = json_pack("{s:o}", "a", obj);
    sw_oas_prune(s, obj, NULL);
    sw_oas_default(s, obj);
    if (sw_oas_validate(s, obj, &causes) != 0)
        json_decref(causes);
    json_decref(obj);
    sw_oas_free(s);

    /* a deep object under preserve-unknown-fields: kept, no crash */
    s = compile(SPEC("'free':{'type':'object','x-kubernetes-preserve-unknown-fields':true}"));
    obj = json_pack("{s:i}", "z", 1);
    for (int i = 0; i < 300; i++)
        obj = json_pack("{s:[o]}", "a", obj);
    obj = json_pack("{s:{s:o}}", "spec", "free", obj);
    unknown = json_array();
    assert_int_equal(pipeline(s, obj, unknown, &causes), 0);
    assert_int_equal(json_array_size(unknown), 0);
    json_decref(unknown);
    json_decref(obj);
    sw_oas_free(s);

    /* a pattern of SW_OAS_MAX_PATTERN bytes compiles, one byte more is refused */
    char *pattern = sw_malloc(SW_OAS_MAX_PATTERN + 2);
    memset(pattern, 'a', SW_OAS_MAX_PATTERN + 1);
    pattern[SW_OAS_MAX_PATTERN] = '\0';
    schema = parse(SPEC("'s':{'type':'string'}"));
    json_t *str = json_object_get(
        json_object_get(json_object_get(json_object_get(schema, "properties"), "spec"),
                        "properties"),
        "s");
    json_object_set_new(str, "pattern", json_string(pattern));
    s = NULL;
    assert_int_equal(sw_oas_compile(schema, "schema", false, &s, &causes), 0);
    sw_oas_free(s);
    pattern[SW_OAS_MAX_PATTERN] = 'a';
    pattern[SW_OAS_MAX_PATTERN + 1] = '\0';
    json_object_set_new(str, "pattern", json_string(pattern));
    s = NULL;
    causes = NULL;
    assert_int_equal(sw_oas_compile(schema, "schema", false, &s, &causes), SW_EINVALID);
    assert_null(s);
    assert_string_equal(str_member(json_array_get(causes, 0), "field"),
                        "schema.properties[spec].properties[s].pattern");
    json_decref(causes);
    json_decref(schema);
    sw_free(pattern);

    /* more schemas than SW_OAS_MAX_NODES in one tree */
    json_t *props = json_object();
    char key[32];
    for (int i = 0; i <= SW_OAS_MAX_NODES; i++) {
        snprintf(key, sizeof(key), "p%d", i);
        json_object_set_new(props, key, json_pack("{s:s}", "type", "string"));
    }
    schema = json_pack("{s:s,s:o}", "type", "object", "properties", props);
    expect_refused(schema, "too many nodes");
    json_decref(schema);

    /* many failures: at most SW_OAS_MAX_CAUSES causes */
    s = compile(SPEC("'l':{'type':'array','items':{'type':'string','maxLength':1}}"));
    json_t *list = json_array();
    for (int i = 0; i < 500; i++)
        json_array_append_new(list, i % 2 ? json_integer(i) : json_string("toolong"));
    obj = json_pack("{s:{s:o}}", "spec", "l", list);
    causes = NULL;
    assert_int_equal(sw_oas_validate(s, obj, &causes), SW_EINVALID);
    assert_true(json_array_size(causes) >= 1);
    assert_true(json_array_size(causes) <= SW_OAS_MAX_CAUSES);
    json_decref(causes);
    json_decref(obj);
    sw_oas_free(s);

    /* not JSON Schema at all: a schema that is not an object, a properties that is not one */
    const char *junk[] = {
        "['type','object']",
        "{'type':'object','properties':[1,2]}",
        "{'type':'object','properties':{'spec':'string'}}",
        "{'type':'object','properties':{'spec':{'type':7}}}",
        "{'type':'object','properties':{'s':{'type':'string','maxLength':'x'}}}",
        "{'type':'object','properties':{'s':{'type':'string','maxLength':-1}}}",
        "{'type':'object','properties':{'s':{'type':'string','pattern':5}}}",
        "{'type':'object','properties':{'s':{'type':'string','enum':'red'}}}",
        "{'type':'object','properties':{'l':{'type':'array','items':[{'type':'string'}]}}}",
        "{'type':'object','properties':{'n':{'type':'integer','multipleOf':0}}}",
    };
    size_t failed = 0;
    for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
        schema = parse(junk[j]);
        if (!refused(schema, junk[j]))
            failed++;
        json_decref(schema);
    }
    if (failed)
        fail_msg("%zu malformed schemas compiled", failed);
}

/* A schema compiled lazily (a stored CRD's) checks its patterns on first use, the same way. */
static void test_lazy_patterns(void **state)
{
    (void)state;
    json_t *schema = parse("{'type':'object','properties':{'spec':{'type':'object','properties':"
                           "{'s':{'type':'string','pattern':'^[a-z]+\\\\d$'}}}}}");
    sw_oas *s = NULL;
    json_t *causes = NULL;
    assert_int_equal(sw_oas_compile_lazy(schema, "schema", false, &s, &causes), 0);
    json_t *good = parse("{'spec':{'s':'abc1'}}"), *bad = parse("{'spec':{'s':'ABC'}}");
    for (int round = 0; round < 2; round++) { /* compiled by the first, reused by the second */
        assert_int_equal(sw_oas_validate(s, good, &causes), 0);
        assert_int_equal(sw_oas_validate(s, bad, &causes), SW_EINVALID);
        assert_string_equal(json_string_value(json_object_get(json_array_get(causes, 0), "field")),
                            "spec.s");
        json_decref(causes);
    }
    json_decref(good);
    json_decref(bad);
    json_decref(schema);
    sw_oas_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_source),
        cmocka_unit_test(test_status_root),
        cmocka_unit_test(test_prune),
        cmocka_unit_test(test_prune_additional_true),
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_has_defaults),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_int_or_string),
        cmocka_unit_test(test_nullable),
        cmocka_unit_test(test_list_equality),
        cmocka_unit_test(test_long_values),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_lazy_patterns),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
