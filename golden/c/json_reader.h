/* A tiny JSON reader (no dependencies, C99): enough for specproof's golden vectors, written to
 * be copied into an engine's test folder. json_parse() builds a tree; json_get() looks up an
 * object key; arrays and objects keep their items in order. Numbers are doubles; strings are
 * NUL-terminated copies (escapes \" \\ \/ \n \t are decoded; \uXXXX is kept verbatim). */
#ifndef SPECPROOF_JSON_READER_H
#define SPECPROOF_JSON_READER_H

#include <stddef.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json_value {
    json_kind kind;
    double number;      /* JSON_NUMBER; JSON_BOOL: 1 or 0 */
    char *string;       /* JSON_STRING */
    size_t count;       /* JSON_ARRAY, JSON_OBJECT: number of items */
    char **keys;        /* JSON_OBJECT: key of each item */
    struct json_value **items;
} json_value;

/* Parse a NUL-terminated text; NULL on a syntax error (its offset in *error_at when given). */
json_value *json_parse(const char *text, size_t *error_at);
void json_free(json_value *value);
/* The item under key in an object, or NULL. */
const json_value *json_get(const json_value *object, const char *key);

#endif
