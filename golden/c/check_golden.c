/* Checks a C implementation of chain verification against specproof's golden law vectors.
 *
 *   cc -std=c99 -O2 -o check_golden check_golden.c json_reader.c -lm
 *   ./check_golden ../v1/chain_vectors.json
 *
 * For every case: the exact outputs for the injected uniforms, the law of one round (every
 * outcome's probability within 1e-12, no outcome missing or extra), and the refusal of
 * non-finite rows. Exit status 0 when every case agrees, 1 otherwise, 2 for an unreadable file.
 * Built with -DSPECPROOF_BUG_RESIDUAL_FROM_TARGET the correction token is drawn from the target
 * row instead of max(p - q, 0): the must-fail build, which these vectors reject. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"

#define MAX_VOCAB 64
#define MAX_DRAFTS 16
#define MAX_OUTCOMES (MAX_DRAFTS * MAX_VOCAB + MAX_VOCAB)
#define LAW_TOLERANCE 1e-12

typedef struct {
    int drafts, vocab, greedy;
    int ids[MAX_DRAFTS];
    double target[MAX_DRAFTS + 1][MAX_VOCAB]; /* processed target rows, n + 1 of them */
    double draft[MAX_DRAFTS][MAX_VOCAB];
} round_inputs;

typedef struct { int length; int tokens[MAX_DRAFTS + 1]; double probability; } outcome;

/* ---- the implementation under test: what an engine would replace with its own ---- */

static int finite_rows(const round_inputs *in) {
    for (int k = 0; k <= in->drafts; k++)
        for (int v = 0; v < in->vocab; v++) {
            if (!isfinite(in->target[k][v]) || in->target[k][v] < 0) return 0;
            if (k < in->drafts && (!isfinite(in->draft[k][v]) || in->draft[k][v] < 0)) return 0;
        }
    return 1;
}

static int argmax(const double *row, int vocab) {
    int best = 0;
    for (int v = 1; v < vocab; v++)
        if (row[v] > row[best]) best = v;
    return best;
}

/* The correction law's weights at a rejection: max(p - q, 0). */
static void correction_weights(const double *p, const double *q, int vocab, double *out) {
    for (int v = 0; v < vocab; v++) {
#ifdef SPECPROOF_BUG_RESIDUAL_FROM_TARGET
        (void)q;
        out[v] = p[v];
#else
        out[v] = p[v] > q[v] ? p[v] - q[v] : 0.0;
#endif
    }
}

/* The smallest token v with u * total < w_0 + ... + w_v. */
static int inverse_cdf(const double *weights, int vocab, double u) {
    double total = 0.0, cumulative = 0.0;
    for (int v = 0; v < vocab; v++) total += weights[v];
    for (int v = 0; v < vocab; v++) {
        cumulative += weights[v];
        if (weights[v] > 0 && u * total < cumulative) return v;
    }
    return vocab - 1;
}

/* One round with injected uniforms; the number of emitted tokens, or -1: refused. */
static int chain_verify(const round_inputs *in, const double *accept, double draw, int *emitted) {
    double weights[MAX_VOCAB];
    int count = 0;
    if (!finite_rows(in)) return -1;
    for (int k = 0; k < in->drafts; k++) {
        int x = in->ids[k];
        if (in->greedy) {
            int best = argmax(in->target[k], in->vocab);
            if (x != best) { emitted[count++] = best; return count; }
        } else if (!(accept[k] * in->draft[k][x] < in->target[k][x])) {
            correction_weights(in->target[k], in->draft[k], in->vocab, weights);
            emitted[count++] = inverse_cdf(weights, in->vocab, draw);
            return count;
        }
        emitted[count++] = x;
    }
    emitted[count++] = in->greedy ? argmax(in->target[in->drafts], in->vocab)
                                  : inverse_cdf(in->target[in->drafts], in->vocab, draw);
    return count;
}

/* The law of one round in doubles; the number of outcomes, or -1: refused. */
static int chain_law(const round_inputs *in, outcome *out) {
    double weights[MAX_VOCAB], prefix = 1.0;
    int count = 0;
    if (!finite_rows(in)) return -1;
    if (in->greedy) {
        out[0].probability = 1.0;
        out[0].length = chain_verify(in, NULL, 0.0, out[0].tokens);
        return 1;
    }
    for (int k = 0; k <= in->drafts; k++) {
        const double *law = in->target[k];
        double total = 0.0, reject = 1.0;
        if (k < in->drafts) {
            int x = in->ids[k];
            double accept = in->draft[k][x] > 0 ? in->target[k][x] / in->draft[k][x] : 1.0;
            accept = accept < 1.0 ? accept : 1.0;
            reject = prefix * (1.0 - accept);
            correction_weights(in->target[k], in->draft[k], in->vocab, weights);
            law = weights;
            prefix *= accept;
        } else {
            reject = prefix;
        }
        for (int v = 0; v < in->vocab; v++) total += law[v];
        for (int v = 0; v < in->vocab && reject > 0 && total > 0; v++) {
            if (law[v] <= 0) continue;
            out[count].length = k + 1;
            for (int j = 0; j < k; j++) out[count].tokens[j] = in->ids[j];
            out[count].tokens[k] = v;
            out[count++].probability = reject * law[v] / total;
        }
    }
    return count;
}

/* ---- reading the vectors ---- */

static double number_of(const json_value *v) {
    if (v && v->kind == JSON_NUMBER) return v->number;
    if (v && v->kind == JSON_STRING) { /* "a/b", "nan", "inf" */
        const char *slash = strchr(v->string, '/');
        if (!strcmp(v->string, "nan")) return NAN;
        if (!strcmp(v->string, "inf")) return INFINITY;
        if (!strcmp(v->string, "-inf")) return -INFINITY;
        return slash ? strtod(v->string, NULL) / strtod(slash + 1, NULL) : strtod(v->string, NULL);
    }
    return NAN;
}

static int read_rows(const json_value *rows, int count, int vocab, double (*out)[MAX_VOCAB]) {
    if (!rows || rows->kind != JSON_ARRAY || (int)rows->count != count) return 0;
    for (int k = 0; k < count; k++) {
        if ((int)rows->items[k]->count != vocab) return 0;
        for (int v = 0; v < vocab; v++) out[k][v] = number_of(rows->items[k]->items[v]);
    }
    return 1;
}

static int read_inputs(const json_value *c, round_inputs *in, const char *rows_key) {
    const json_value *inputs = json_get(c, "inputs"), *expected = json_get(c, "expected");
    const json_value *ids = json_get(inputs, "draft_ids");
    const json_value *target = strcmp(rows_key, "target_probs")
                                   ? json_get(expected, rows_key) : json_get(inputs, rows_key);
    if (!ids || ids->kind != JSON_ARRAY || ids->count > MAX_DRAFTS) return 0;
    in->drafts = (int)ids->count;
    in->vocab = (int)number_of(json_get(inputs, "vocab"));
    in->greedy = json_get(json_get(inputs, "sampling"), "greedy")->number != 0;
    if (in->vocab < 1 || in->vocab > MAX_VOCAB) return 0;
    for (int k = 0; k < in->drafts; k++) in->ids[k] = (int)ids->items[k]->number;
    return read_rows(target, in->drafts + 1, in->vocab, in->target) &&
           read_rows(json_get(inputs, "draft_probs"), in->drafts, in->vocab, in->draft);
}

static int same_tokens(const int *a, int length, const json_value *b) {
    if ((int)b->count != length) return 0;
    for (int i = 0; i < length; i++)
        if (a[i] != (int)b->items[i]->number) return 0;
    return 1;
}

static int check_case(const json_value *c, char *why, size_t size) {
    const json_value *expected = json_get(c, "expected");
    round_inputs in;
    outcome law[MAX_OUTCOMES];
    int outcomes;
    if (json_get(expected, "refused")->number != 0) {
        if (!read_inputs(c, &in, "target_probs")) return snprintf(why, size, "unreadable"), 0;
        if (chain_law(&in, law) == -1) return 1;
        return snprintf(why, size, "non-finite rows were not refused"), 0;
    }
    if (!read_inputs(c, &in, "processed_target_float"))
        return snprintf(why, size, "unreadable inputs"), 0;
    const json_value *given = json_get(expected, "with_uniforms");
    for (size_t i = 0; i < given->count; i++) {
        const json_value *u = json_get(given->items[i], "accept_uniforms_float");
        const json_value *tokens = json_get(given->items[i], "emitted");
        double accept[MAX_DRAFTS];
        int emitted[MAX_DRAFTS + 1], length;
        for (size_t k = 0; k < u->count && k < MAX_DRAFTS; k++) accept[k] = u->items[k]->number;
        length = chain_verify(&in, accept, json_get(given->items[i], "draw_uniform_float")->number,
                              emitted);
        if (length < 0 || !same_tokens(emitted, length, tokens))
            return snprintf(why, size, "uniforms #%zu: emitted other tokens", i), 0;
    }
    outcomes = chain_law(&in, law);
    const json_value *exact = json_get(expected, "law");
    for (int i = 0; i < outcomes; i++) {
        double want = 0.0;
        for (size_t j = 0; j < exact->count; j++)
            if (same_tokens(law[i].tokens, law[i].length, json_get(exact->items[j], "emitted")))
                want = json_get(exact->items[j], "probability_float")->number;
        if (fabs(law[i].probability - want) > LAW_TOLERANCE)
            return snprintf(why, size, "outcome #%d: probability %.17g, expected %.17g", i,
                            law[i].probability, want), 0;
    }
    for (size_t j = 0; j < exact->count; j++) {
        int found = 0;
        for (int i = 0; i < outcomes; i++)
            found |= same_tokens(law[i].tokens, law[i].length, json_get(exact->items[j], "emitted"));
        if (!found) return snprintf(why, size, "law outcome #%zu never produced", j), 0;
    }
    return 1;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    char *text;
    long size;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    rewind(f);
    text = malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, f) != (size_t)size) { free(text); text = NULL; }
    if (text) text[size] = '\0';
    fclose(f);
    return text;
}

int main(int argc, char **argv) {
    char *text = argc == 2 ? read_file(argv[1]) : NULL;
    size_t error_at = 0;
    json_value *root = text ? json_parse(text, &error_at) : NULL;
    int failed = 0;
    if (!root) {
        fprintf(stderr, "check_golden: cannot read %s (at byte %zu)\n", argc == 2 ? argv[1] : "(none)",
                error_at);
        return 2;
    }
    const json_value *format = json_get(root, "format"), *cases = json_get(root, "cases");
    if (!format || format->kind != JSON_STRING || strcmp(format->string, "specproof-golden-chain") ||
        number_of(json_get(root, "version")) != 1 || !cases || cases->kind != JSON_ARRAY) {
        fprintf(stderr, "check_golden: not version 1 specproof-golden-chain vectors\n");
        return 2;
    }
    for (size_t i = 0; i < cases->count; i++) {
        char why[160] = "";
        const char *name = json_get(cases->items[i], "name")->string;
        int ok = check_case(cases->items[i], why, sizeof why);
        printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name, ok ? "" : ": ", why);
        failed += !ok;
    }
    printf("%zu cases, %d failed\n", cases->count, failed);
    json_free(root);
    free(text);
    return failed ? 1 : 0;
}
