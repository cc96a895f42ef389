/* See json_reader.h. */
#include "json_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_SIZE 48

/* One open container: where the reader is inside it, for error messages. */
typedef struct {
    int is_object;
    size_t index;          /* the item being read */
    char key[LABEL_SIZE];  /* objects: its key */
    char name[LABEL_SIZE]; /* objects: the value of a "name" member read so far */
} frame;

typedef struct {
    const char *text;
    size_t length, at;
    int failed, depth;
    char message[160];
    frame frames[JSON_MAX_DEPTH];
} reader;

static int peek(const reader *r) { return r->at < r->length ? (unsigned char)r->text[r->at] : -1; }

static void fail(reader *r, const char *what) {
    if (r->failed) return;
    r->failed = 1;
    if (r->at >= r->length)
        snprintf(r->message, sizeof r->message, "the text ends early (truncated?): %s", what);
    else
        snprintf(r->message, sizeof r->message, "%s", what);
}

static void skip_space(reader *r) {
    while (peek(r) == ' ' || peek(r) == '\n' || peek(r) == '\r' || peek(r) == '\t') r->at++;
}

static json_value *new_value(reader *r, json_kind kind) {
    json_value *v = calloc(1, sizeof *v);
    if (v) v->kind = kind;
    else fail(r, "out of memory");
    return v;
}

static void label(char *out, const char *text) {
    snprintf(out, LABEL_SIZE, "%s", text);
}

static json_value *parse_value(reader *r);

static int hex_digit(int c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string at r->at (its opening quote), escapes decoded; NULL on an error. */
static char *parse_string(reader *r) {
    size_t start = ++r->at, length = 0;
    char *out;
    for (;;) {
        int c = peek(r);
        if (c == -1) { fail(r, "unterminated string"); return NULL; }
        if (c == '"') break;
        if (c < 0x20) { fail(r, "a control character inside a string"); return NULL; }
        if (c == '\\') {
            r->at++;
            c = peek(r);
            if (c == 'u') {
                for (int i = 1; i <= 4; i++) {
                    if (r->at + i >= r->length) r->at = r->length; /* cut short */
                    if (r->at >= r->length || !hex_digit((unsigned char)r->text[r->at + i])) {
                        fail(r, "a bad \\u escape");
                        return NULL;
                    }
                }
                r->at += 4;
            } else if (c == -1 || !strchr("\"\\/bfnrt", c)) {
                fail(r, "a bad escape in a string");
                return NULL;
            }
        }
        r->at++;
    }
    out = malloc(r->at - start + 1);
    if (!out) { fail(r, "out of memory"); return NULL; }
    for (size_t i = start; i < r->at; i++) {
        char c = r->text[i];
        if (c == '\\') {
            c = r->text[++i];
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c == 'r') c = '\r';
            else if (c == 'b') c = '\b';
            else if (c == 'f') c = '\f';
            else if (c == 'u') out[length++] = '\\';
        }
        out[length++] = c;
    }
    out[length] = '\0';
    r->at++;
    return out;
}

static int append(reader *r, json_value *v, char *key, json_value *item) {
    json_value **items = realloc(v->items, (v->count + 1) * sizeof *items);
    if (!items) { fail(r, "out of memory"); return 0; }
    v->items = items;
    if (v->kind == JSON_OBJECT) {
        char **keys = realloc(v->keys, (v->count + 1) * sizeof *keys);
        if (!keys) { fail(r, "out of memory"); return 0; }
        v->keys = keys;
        v->keys[v->count] = key;
    }
    v->items[v->count++] = item;
    return 1;
}

static json_value *parse_container(reader *r, json_kind kind, char close) {
    json_value *v;
    frame *f;
    if (r->depth == JSON_MAX_DEPTH) {
        fail(r, "arrays and objects nested deeper than JSON_MAX_DEPTH (32)");
        return NULL;
    }
    if (!(v = new_value(r, kind))) return NULL;
    f = &r->frames[r->depth++];
    memset(f, 0, sizeof *f);
    f->is_object = kind == JSON_OBJECT;
    r->at++;
    skip_space(r);
    if (peek(r) == close) { r->at++; r->depth--; return v; }
    for (;;) {
        char *key = NULL;
        json_value *item;
        skip_space(r);
        if (kind == JSON_OBJECT) {
            if (peek(r) != '"') { fail(r, "expected a key (a string)"); break; }
            if (!(key = parse_string(r))) break;
            label(f->key, key);
            if (json_get(v, key)) { free(key); fail(r, "a duplicate key"); break; }
            skip_space(r);
            if (peek(r) != ':') { free(key); fail(r, "expected ':' after a key"); break; }
            r->at++;
        }
        item = parse_value(r);
        if (!item) { free(key); break; }
        if (!append(r, v, key, item)) { free(key); json_free(item); break; }
        if (key && !strcmp(key, "name") && item->kind == JSON_STRING) label(f->name, item->string);
        f->index++;
        skip_space(r);
        if (peek(r) == ',') { r->at++; continue; }
        if (peek(r) == close) { r->at++; r->depth--; return v; }
        fail(r, kind == JSON_OBJECT ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    json_free(v);
    return NULL; /* the frame stays open: the error message reports the path */
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number_length(const reader *r) {
    size_t at = r->at;
    const char *t = r->text;
#define DIGIT(i) ((i) < r->length && t[i] >= '0' && t[i] <= '9')
    if (at < r->length && t[at] == '-') at++;
    if (!DIGIT(at)) return 0;
    if (t[at] == '0') at++;
    else while (DIGIT(at)) at++;
    if (at < r->length && t[at] == '.') {
        if (!DIGIT(at + 1)) return 0;
        at++;
        while (DIGIT(at)) at++;
    }
    if (at < r->length && (t[at] == 'e' || t[at] == 'E')) {
        at++;
        if (at < r->length && (t[at] == '+' || t[at] == '-')) at++;
        if (!DIGIT(at)) return 0;
        while (DIGIT(at)) at++;
    }
#undef DIGIT
    return (int)(at - r->at);
}

static int literal(reader *r, const char *word) {
    size_t n = strlen(word), left = r->length - r->at;
    if (left < n && !strncmp(r->text + r->at, word, left)) r->at = r->length; /* cut short */
    if (left < n || strncmp(r->text + r->at, word, n)) return 0;
    r->at += n;
    return 1;
}

static json_value *parse_value(reader *r) {
    json_value *v;
    int n;
    skip_space(r);
    switch (peek(r)) {
    case -1: fail(r, "expected a value"); return NULL;
    case '{': return parse_container(r, JSON_OBJECT, '}');
    case '[': return parse_container(r, JSON_ARRAY, ']');
    case '"':
        if (!(v = new_value(r, JSON_STRING))) return NULL;
        if ((v->string = parse_string(r))) return v;
        free(v);
        return NULL;
    }
    if (literal(r, "null")) return new_value(r, JSON_NULL);
    if (literal(r, "true")) {
        if ((v = new_value(r, JSON_BOOL))) v->number = 1;
        return v;
    }
    if (literal(r, "false")) return new_value(r, JSON_BOOL);
    n = number_length(r);
    if (n == 0 && strspn(r->text + r->at, "-0123456789.eE+") == r->length - r->at)
        r->at = r->length; /* a number cut short */
    if (n == 0 || n > 64) { fail(r, "expected a value"); return NULL; }
    if (!(v = new_value(r, JSON_NUMBER))) return NULL;
    {
        char digits[65];
        memcpy(digits, r->text + r->at, (size_t)n);
        digits[n] = '\0';
        v->number = strtod(digits, NULL);
    }
    r->at += (size_t)n;
    return v;
}

static void describe(const reader *r, char *why, size_t size) {
    char path[512] = "";
    size_t used = 0;
    for (int d = 0; d < r->depth && used < sizeof path; d++) {
        const frame *f = &r->frames[d];
        if (f->is_object)
            used += (size_t)snprintf(path + used, sizeof path - used, "%s%s", d ? "." : "", f->key);
        else
            used += (size_t)snprintf(path + used, sizeof path - used, "[%zu]", f->index);
        if (used < sizeof path && d + 1 < r->depth && r->frames[d + 1].name[0])
            used += (size_t)snprintf(path + used, sizeof path - used, " (\"%s\")",
                                     r->frames[d + 1].name);
    }
    snprintf(why, size, "at byte %zu, in %s: %s", r->at, r->depth ? path : "the top level",
             r->message);
}

json_value *json_parse(const char *text, size_t length, char *why, size_t why_size) {
    reader r;
    json_value *v;
    memset(&r, 0, sizeof r);
    r.text = text;
    r.length = length;
    const char *nul = memchr(text, '\0', length);
    if (nul) {
        snprintf(why, why_size, "a NUL byte at byte %zu", (size_t)(nul - text));
        return NULL;
    }
    skip_space(&r);
    if (r.at == length) { snprintf(why, why_size, "the text is empty"); return NULL; }
    v = parse_value(&r);
    if (v) {
        skip_space(&r);
        if (r.at != length) { json_free(v); v = NULL; fail(&r, "text after the value"); }
    }
    if (!v) describe(&r, why, why_size);
    return v;
}

void json_free(json_value *v) {
    if (!v) return;
    for (size_t i = 0; i < v->count; i++) {
        if (v->keys) free(v->keys[i]);
        json_free(v->items[i]);
    }
    free(v->keys);
    free(v->items);
    free(v->string);
    free(v);
}

const json_value *json_get(const json_value *object, const char *key) {
    if (!object || object->kind != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < object->count; i++)
        if (!strcmp(object->keys[i], key)) return object->items[i];
    return NULL;
}

const char *json_kind_name(json_kind kind) {
    static const char *names[] = {"null", "a boolean", "a number", "a string", "an array",
                                  "an object"};
    return names[kind];
}
