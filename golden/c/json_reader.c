/* See json_reader.h. */
#include "json_reader.h"

#include <stdlib.h>
#include <string.h>

typedef struct { const char *text; size_t at; int failed; } reader;

static void skip_space(reader *r) {
    while (r->text[r->at] == ' ' || r->text[r->at] == '\n' || r->text[r->at] == '\r' ||
           r->text[r->at] == '\t')
        r->at++;
}

static json_value *new_value(json_kind kind) {
    json_value *v = calloc(1, sizeof *v);
    if (v) v->kind = kind;
    return v;
}

static json_value *parse_value(reader *r);

static char *parse_string(reader *r) {
    size_t start = ++r->at, length = 0;
    char *out;
    while (r->text[r->at] && r->text[r->at] != '"') {
        if (r->text[r->at] == '\\' && r->text[r->at + 1]) r->at++;
        r->at++;
    }
    if (r->text[r->at] != '"') { r->failed = 1; return NULL; }
    out = malloc(r->at - start + 1);
    if (!out) { r->failed = 1; return NULL; }
    for (size_t i = start; i < r->at; i++) {
        char c = r->text[i];
        if (c == '\\') {
            c = r->text[++i];
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c == 'u') { out[length++] = '\\'; }
        }
        out[length++] = c;
    }
    out[length] = '\0';
    r->at++;
    return out;
}

static int append(json_value *v, char *key, json_value *item) {
    json_value **items = realloc(v->items, (v->count + 1) * sizeof *items);
    if (!items) return 0;
    v->items = items;
    if (v->kind == JSON_OBJECT) {
        char **keys = realloc(v->keys, (v->count + 1) * sizeof *keys);
        if (!keys) return 0;
        v->keys = keys;
        v->keys[v->count] = key;
    }
    v->items[v->count++] = item;
    return 1;
}

static json_value *parse_container(reader *r, json_kind kind, char close) {
    json_value *v = new_value(kind);
    if (!v) { r->failed = 1; return NULL; }
    r->at++;
    skip_space(r);
    if (r->text[r->at] == close) { r->at++; return v; }
    for (;;) {
        char *key = NULL;
        json_value *item;
        skip_space(r);
        if (kind == JSON_OBJECT) {
            if (r->text[r->at] != '"' || !(key = parse_string(r))) break;
            skip_space(r);
            if (r->text[r->at++] != ':') { free(key); break; }
        }
        item = parse_value(r);
        if (!item || !append(v, key, item)) { free(key); json_free(item); break; }
        skip_space(r);
        if (r->text[r->at] == ',') { r->at++; continue; }
        if (r->text[r->at] == close) { r->at++; return v; }
        break;
    }
    r->failed = 1;
    json_free(v);
    return NULL;
}

static json_value *parse_value(reader *r) {
    json_value *v;
    char *end;
    skip_space(r);
    switch (r->text[r->at]) {
    case '{': return parse_container(r, JSON_OBJECT, '}');
    case '[': return parse_container(r, JSON_ARRAY, ']');
    case '"':
        v = new_value(JSON_STRING);
        if (v && (v->string = parse_string(r))) return v;
        free(v);
        r->failed = 1;
        return NULL;
    }
    if (!strncmp(r->text + r->at, "null", 4)) { r->at += 4; return new_value(JSON_NULL); }
    if (!strncmp(r->text + r->at, "true", 4) || !strncmp(r->text + r->at, "false", 5)) {
        v = new_value(JSON_BOOL);
        if (v) v->number = r->text[r->at] == 't';
        r->at += r->text[r->at] == 't' ? 4 : 5;
        return v;
    }
    v = new_value(JSON_NUMBER);
    if (!v) { r->failed = 1; return NULL; }
    v->number = strtod(r->text + r->at, &end);
    if (end == r->text + r->at) { free(v); r->failed = 1; return NULL; }
    r->at = (size_t)(end - r->text);
    return v;
}

json_value *json_parse(const char *text, size_t *error_at) {
    reader r = {text, 0, 0};
    json_value *v = parse_value(&r);
    skip_space(&r);
    if (!r.failed && v && text[r.at] == '\0') return v;
    json_free(v);
    if (error_at) *error_at = r.at;
    return NULL;
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
