/* A small strict JSON reader (no dependencies, C99): enough for specproof's golden vectors,
 * written to be copied into an engine's test folder. json_parse() builds a tree; json_get()
 * looks up an object key; arrays and objects keep their items in order. Numbers are doubles
 * (JSON's grammar only: no nan, inf or hex); strings are NUL-terminated copies (every escape is
 * checked; \uXXXX is kept verbatim). It refuses, with a message naming the place: an empty or
 * truncated text, a NUL byte, trailing text, a duplicate key, control characters in strings,
 * and nesting deeper than JSON_MAX_DEPTH (so hostile input cannot exhaust the stack). */
#ifndef SPECPROOF_JSON_READER_H
#define SPECPROOF_JSON_READER_H

#include <stddef.h>

#define JSON_MAX_DEPTH 32

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json_value {
    json_kind kind;
    double number;      /* JSON_NUMBER; JSON_BOOL: 1 or 0 */
    char *string;       /* JSON_STRING */
    size_t count;       /* JSON_ARRAY, JSON_OBJECT: number of items */
    char **keys;        /* JSON_OBJECT: key of each item */
    struct json_value **items;
} json_value;

/* Parse text[0..length); NULL on any error, with a one-line message in why (the byte offset
 * and the path of the value being read, e.g. cases[5] ("basic").expected.law[2]). */
json_value *json_parse(const char *text, size_t length, char *why, size_t why_size);
void json_free(json_value *value);
/* The item under key in an object, or NULL. */
const json_value *json_get(const json_value *object, const char *key);
/* "null", "a boolean", "a number", "a string", "an array" or "an object". */
const char *json_kind_name(json_kind kind);

#endif
