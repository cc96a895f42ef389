/* Checks a C implementation of chain verification against specproof's golden law vectors.
 *
 *   cc -std=c99 -O2 -o check_golden check_golden.c json_reader.c -lm
 *   ./check_golden ../v1/chain_vectors.json
 *
 * Every field of the file is checked before use (presence, type, length, range, fractions
 * against their doubles, the raw rows against the processed rows, accepted against emitted);
 * a file that fails is refused with one line naming the case and field. Then, for every case:
 * the exact outputs for the injected uniforms, the law of one round (every outcome's
 * probability within 1e-12, no outcome missing or extra), and the refusal of non-finite rows.
 * Exit status 0 when every case agrees, 1 when one does not, 2 for a file refused.
 * Built with -DSPECPROOF_BUG_RESIDUAL_FROM_TARGET the correction token is drawn from the target
 * row instead of max(p - q, 0): the must-fail build, which these vectors reject. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
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

/* ---- reading the vectors: every field, type, length and range checked before use ---- */

#define PATH 192
#define MAX_GIVEN 64
#define ROW_TOLERANCE 1e-12

typedef struct {
    double accept[MAX_DRAFTS], draw;
    int length, tokens[MAX_DRAFTS + 1];
} given_uniforms;

typedef struct {
    int refused, top_k, exactly_k, power; /* power: m of the temperature 1/m */
    round_inputs raw, processed;
    int outcomes, given;
    outcome law[MAX_OUTCOMES];
    given_uniforms with[MAX_GIVEN];
} golden_case;

static jmp_buf refuse_jump;
static char refusal[512], case_label[96];

/* Refuse the file: a message naming the case and the field, then back to main. */
static void refuse(const char *path, const char *format, ...) {
    char what[256];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    snprintf(refusal, sizeof refusal, "%sfield %s: %s", case_label, path, what);
    longjmp(refuse_jump, 1);
}

static const json_value *checked(const json_value *v, const char *path, json_kind kind,
                                 int nullable) {
    if (!v) refuse(path, "missing");
    if (v->kind == JSON_NULL && nullable) return v;
    if (v->kind != kind)
        refuse(path, "%s, expected %s%s", json_kind_name(v->kind), json_kind_name(kind),
               nullable ? " or null" : "");
    return v;
}

/* A path too long for its buffer ends in "...". */
static void mark_if_cut(char *path, int written) {
    if (written < 0 || written >= PATH) strcpy(path + PATH - 4, "...");
}

/* object.key, of the given kind; its path written to path. */
static const json_value *field(const json_value *object, const char *parent, const char *key,
                               json_kind kind, int nullable, char *path) {
    mark_if_cut(path, snprintf(path, PATH, "%s%s%s", parent, *parent ? "." : "", key));
    return checked(json_get(object, key), path, kind, nullable);
}

static const json_value *element(const json_value *array, const char *parent, size_t index,
                                 json_kind kind, int nullable, char *path) {
    mark_if_cut(path, snprintf(path, PATH, "%s[%zu]", parent, index));
    return checked(index < array->count ? array->items[index] : NULL, path, kind, nullable);
}

static void need_count(const json_value *array, const char *path, size_t low, size_t high) {
    if (array->count < low || array->count > high) {
        if (low == high) refuse(path, "%zu items, expected %zu", array->count, low);
        refuse(path, "%zu items, expected %zu to %zu", array->count, low, high);
    }
}

static int whole(const json_value *v, const char *path, double low, double high) {
    if (v->number != floor(v->number) || v->number < low || v->number > high)
        refuse(path, "%.17g, expected an integer in [%.0f, %.0f]", v->number, low, high);
    return (int)v->number;
}

/* An exact fraction "a" or "a/b" (decimal digits, b > 0) as a double; "nan", "inf" and "-inf"
 * only where nonfinite is set. */
static double fraction(const json_value *v, const char *path, int nonfinite) {
    const char *s = v->string;
    size_t digits = strspn(s, "0123456789"), denominator = 0;
    if (nonfinite && !strcmp(s, "nan")) return NAN;
    if (nonfinite && !strcmp(s, "inf")) return INFINITY;
    if (nonfinite && !strcmp(s, "-inf")) return -INFINITY;
    if (s[digits] == '/') denominator = strspn(s + digits + 1, "0123456789");
    if (digits == 0 || digits > 40 || denominator > 40 ||
        s[digits + (denominator ? denominator + 1 : 0)] != '\0' ||
        (s[digits] == '/' && (denominator == 0 || strspn(s + digits + 1, "0") == denominator)))
        refuse(path, "\"%.40s\" is not a fraction a/b of integers a >= 0, b > 0", s);
    return denominator ? strtod(s, NULL) / strtod(s + digits + 1, NULL) : strtod(s, NULL);
}

static double fraction_in(const json_value *v, const char *path, double low, double high,
                          int open_low, int open_high) {
    double x = fraction(v, path, 0);
    if (x < low || x > high || (open_low && x == low) || (open_high && x == high))
        refuse(path, "%s, expected a value in %c%g, %g%c", v->string, open_low ? '(' : '[', low,
               high, open_high ? ')' : ']');
    return x;
}

static int close_to(double a, double b, double tolerance) {
    return fabs(a - b) <= tolerance * (fabs(b) > 1 ? fabs(b) : 1);
}

/* A *_float field against its exact value: the nearest double (null when that is not finite). */
static void same_number(double exact, const json_value *v, const char *path) {
    checked(v, path, JSON_NUMBER, !isfinite(exact));
    if (!isfinite(exact)) {
        if (v->kind != JSON_NULL) refuse(path, "%.17g, expected null (not finite)", v->number);
    } else if (!close_to(v->number, exact, 1e-14)) {
        refuse(path, "%.17g, but the exact value is %.17g", v->number, exact);
    }
}

/* Rows under parent.key: count rows of vocab fraction strings, the same as *_float doubles and,
 * for raw rows (inputs), as logits (*_logits: ln of the row, null at zero mass). */
static void read_rows(const json_value *parent, const char *parent_path, const char *key,
                      int count, int vocab, int raw, double (*out)[MAX_VOCAB]) {
    char key_float[64], key_logits[64], path[PATH], path_float[PATH], path_logits[PATH];
    char row_path[PATH], row_float_path[PATH], row_logits_path[PATH], cell[PATH];
    const json_value *rows, *floats, *logits = NULL;
    snprintf(key_float, sizeof key_float, "%s_float", key);
    snprintf(key_logits, sizeof key_logits, "%.*s_logits", (int)(strlen(key) - 6), key);
    rows = field(parent, parent_path, key, JSON_ARRAY, 0, path);
    floats = field(parent, parent_path, key_float, JSON_ARRAY, 0, path_float);
    need_count(rows, path, (size_t)count, (size_t)count);
    need_count(floats, path_float, (size_t)count, (size_t)count);
    if (raw) {
        logits = field(parent, parent_path, key_logits, JSON_ARRAY, 0, path_logits);
        need_count(logits, path_logits, (size_t)count, (size_t)count);
    }
    for (int k = 0; k < count; k++) {
        const json_value *row = element(rows, path, (size_t)k, JSON_ARRAY, 0, row_path);
        const json_value *row_float = element(floats, path_float, (size_t)k, JSON_ARRAY, 0,
                                              row_float_path);
        const json_value *row_logits = NULL;
        double total = 0.0;
        need_count(row, row_path, (size_t)vocab, (size_t)vocab);
        need_count(row_float, row_float_path, (size_t)vocab, (size_t)vocab);
        if (raw) {
            row_logits = element(logits, path_logits, (size_t)k, JSON_ARRAY, 0, row_logits_path);
            need_count(row_logits, row_logits_path, (size_t)vocab, (size_t)vocab);
        }
        for (int v = 0; v < vocab; v++) {
            const json_value *mass = element(row, row_path, (size_t)v, JSON_STRING, 0, cell);
            out[k][v] = fraction(mass, cell, raw);
            total += out[k][v];
            element(row_float, row_float_path, (size_t)v, JSON_NUMBER, 1, cell);
            same_number(out[k][v], row_float->items[v], cell);
            if (raw) {
                const json_value *l = element(row_logits, row_logits_path, (size_t)v,
                                              JSON_NUMBER, 1, cell);
                if (isfinite(out[k][v]) && out[k][v] > 0) {
                    checked(l, cell, JSON_NUMBER, 0);
                    if (!close_to(exp(l->number), out[k][v], 1e-12))
                        refuse(cell, "%.17g is not ln %.17g", l->number, out[k][v]);
                } else if (l->kind != JSON_NULL) {
                    refuse(cell, "%.17g, expected null (no mass or not finite)", l->number);
                }
            }
        }
        if (isfinite(total) && !close_to(total, 1.0, ROW_TOLERANCE))
            refuse(row_path, "sums to %.17g, not 1", total);
    }
}

static int finite_everywhere(const round_inputs *in) {
    for (int k = 0; k <= in->drafts; k++)
        for (int v = 0; v < in->vocab; v++)
            if (!isfinite(in->target[k][v]) || (k < in->drafts && !isfinite(in->draft[k][v])))
                return 0;
    return 1;
}

static void read_sampling(const json_value *inputs, golden_case *out) {
    static const char *orders[] = {"vllm", "sequential", "joint", "llama.cpp"};
    char s[PATH], p[PATH], pf[PATH];
    const json_value *sampling = field(inputs, "inputs", "sampling", JSON_OBJECT, 0, s);
    const json_value *text = field(sampling, s, "temperature", JSON_STRING, 0, p);
    const json_value *top_k, *order;
    double temperature = fraction(text, p, 0);
    int greedy, known = 0;
    same_number(temperature, field(sampling, s, "temperature_float", JSON_NUMBER, 0, pf), pf);
    greedy = field(sampling, s, "greedy", JSON_BOOL, 0, p)->number != 0;
    if (greedy != (temperature == 0))
        refuse(p, "%s with temperature %s (temperature 0 marks greedy cases)",
               greedy ? "true" : "false", text->string);
    out->power = 1;
    if (!greedy) {
        double power = 1.0 / temperature;
        if (power != floor(power) || power > 64)
            refuse(p, "temperature %s is not 1/m for an integer m <= 64", text->string);
        out->power = (int)power;
    }
    out->raw.greedy = out->processed.greedy = greedy;
    top_k = field(sampling, s, "top_k", JSON_NUMBER, 1, p);
    out->top_k = top_k->kind == JSON_NULL ? 0 : whole(top_k, p, 1, 1 << 30);
    for (int i = 0; i < 2; i++) {
        const char *name = i ? "min_p" : "top_p";
        char name_float[16];
        const json_value *value = field(sampling, s, name, JSON_STRING, 1, p), *as_float;
        snprintf(name_float, sizeof name_float, "%s_float", name);
        as_float = field(sampling, s, name_float, JSON_NUMBER, 1, pf);
        if (value->kind == JSON_NULL) {
            if (as_float->kind != JSON_NULL) refuse(pf, "a number, but %s is null", name);
            continue;
        }
        same_number(fraction_in(value, p, 0, 1, !i, 0), as_float, pf);
    }
    order = field(sampling, s, "filter_order", JSON_STRING, 0, p);
    for (int i = 0; i < 4; i++) known |= !strcmp(order->string, orders[i]);
    if (!known)
        refuse(p, "\"%.40s\", expected vllm, sequential, joint or llama.cpp", order->string);
    out->exactly_k = !strcmp(order->string, "llama.cpp");
}

static void read_tokens(const json_value *item, const char *parent, const round_inputs *in,
                        int *length, int *tokens) {
    char p[PATH], cell[PATH];
    char accepted_path[PATH];
    int accepted = whole(field(item, parent, "accepted", JSON_NUMBER, 0, accepted_path),
                         accepted_path, 0, in->drafts);
    const json_value *emitted = field(item, parent, "emitted", JSON_ARRAY, 0, p);
    if (emitted->count != (size_t)accepted + 1)
        refuse(accepted_path, "%d, but emitted holds %zu tokens (accepted drafts and one more)",
               accepted, emitted->count);
    for (int j = 0; j <= accepted; j++) {
        tokens[j] = whole(element(emitted, p, (size_t)j, JSON_NUMBER, 0, cell), cell, 0,
                          in->vocab - 1);
        if (j < accepted && tokens[j] != in->ids[j])
            refuse(cell, "%d, but accepted = %d and draft %d is token %d", tokens[j], accepted,
                   j + 1, in->ids[j]);
    }
    *length = accepted + 1;
}

/* The processed rows are the raw rows at the temperature (p^m renormalised) restricted to the
 * tokens the filters keep: the argmax and a subset of the raw support, top-k by its tie rule. */
static void check_processed(const golden_case *c) {
    char path[PATH];
    for (int k = 0; k <= c->raw.drafts; k++) {
        const double *raw = c->raw.target[k], *kept = c->processed.target[k];
        double total = 0.0, sorted[MAX_VOCAB], kth = 0.0;
        int count = 0, vocab = c->raw.vocab;
        snprintf(path, sizeof path, "expected.processed_target[%d]", k);
        for (int v = 0; v < vocab; v++)
            if (kept[v] > 0) {
                if (raw[v] <= 0) refuse(path, "token %d has mass, but none in the raw row", v);
                total += pow(raw[v], c->power);
                count++;
            }
        if (kept[argmax(raw, vocab)] <= 0) refuse(path, "the raw row's argmax was cut");
        for (int v = 0; v < vocab; v++) {
            double want = c->raw.greedy ? raw[v] : (kept[v] > 0 ? pow(raw[v], c->power) / total : 0);
            if (!close_to(kept[v], want, ROW_TOLERANCE))
                refuse(path, "token %d: %.17g, not the raw row at the temperature (%.17g)", v,
                       kept[v], want);
        }
        if (!c->top_k || c->top_k >= vocab) continue;
        for (int v = 0; v < vocab; v++) sorted[v] = raw[v];
        for (int i = 0; i < c->top_k; i++) /* the k-th largest, by selection */
            for (int j = i + 1; j < vocab; j++)
                if (sorted[j] > sorted[i]) { double t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t; }
        kth = sorted[c->top_k - 1];
        if (c->exactly_k && count > c->top_k)
            refuse(path, "keeps %d tokens; top_k = %d in order llama.cpp keeps at most k", count,
                   c->top_k);
        for (int v = 0; v < vocab; v++)
            if (kept[v] > 0 && raw[v] < kth)
                refuse(path, "keeps token %d, less probable than the top_k = %d-th", v, c->top_k);
    }
}

static void read_expected(const json_value *c, golden_case *out) {
    char e[PATH], p[PATH], item_path[PATH], cell[PATH], q[PATH], uf_path[PATH];
    const json_value *expected = field(c, "", "expected", JSON_OBJECT, 0, e);
    const json_value *law, *given;
    double total = 0.0;
    out->refused = field(expected, e, "refused", JSON_BOOL, 0, p)->number != 0;
    if (out->refused != !finite_everywhere(&out->raw))
        refuse(p, out->refused ? "true, but every row is finite" : "false, but a row is not finite");
    if (out->refused) {
        field(expected, e, "reason", JSON_STRING, 0, p);
        return;
    }
    out->processed.drafts = out->raw.drafts;
    out->processed.vocab = out->raw.vocab;
    memcpy(out->processed.ids, out->raw.ids, sizeof out->raw.ids);
    memcpy(out->processed.draft, out->raw.draft, sizeof out->raw.draft);
    read_rows(expected, e, "processed_target", out->raw.drafts + 1, out->raw.vocab, 0,
              out->processed.target);
    check_processed(out);
    law = field(expected, e, "law", JSON_ARRAY, 0, p);
    need_count(law, p, 1, MAX_OUTCOMES);
    out->outcomes = (int)law->count;
    for (size_t j = 0; j < law->count; j++) {
        const json_value *o = element(law, p, j, JSON_OBJECT, 0, item_path);
        outcome *mine = &out->law[j];
        read_tokens(o, item_path, &out->raw, &mine->length, mine->tokens);
        mine->probability = fraction_in(field(o, item_path, "probability", JSON_STRING, 0, q), q,
                                        0, 1, 1, 0);
        same_number(mine->probability, field(o, item_path, "probability_float", JSON_NUMBER, 0, q), q);
        total += mine->probability;
    }
    if (!close_to(total, 1.0, ROW_TOLERANCE)) refuse(p, "probabilities sum to %.17g, not 1", total);
    given = field(expected, e, "with_uniforms", JSON_ARRAY, 0, p);
    need_count(given, p, 0, MAX_GIVEN);
    out->given = (int)given->count;
    for (size_t i = 0; i < given->count; i++) {
        const json_value *g = element(given, p, i, JSON_OBJECT, 0, item_path), *u, *uf;
        given_uniforms *mine = &out->with[i];
        size_t n = (size_t)out->raw.drafts;
        u = field(g, item_path, "accept_uniforms", JSON_ARRAY, 0, q);
        need_count(u, q, n, n);
        uf = field(g, item_path, "accept_uniforms_float", JSON_ARRAY, 0, uf_path);
        need_count(uf, uf_path, n, n);
        for (size_t k = 0; k < n; k++) {
            mine->accept[k] = fraction_in(element(u, q, k, JSON_STRING, 0, cell), cell, 0, 1, 0, 1);
            element(uf, uf_path, k, JSON_NUMBER, 0, cell);
            same_number(mine->accept[k], uf->items[k], cell);
        }
        mine->draw = fraction_in(field(g, item_path, "draw_uniform", JSON_STRING, 0, q), q, 0, 1,
                                 0, 1);
        same_number(mine->draw, field(g, item_path, "draw_uniform_float", JSON_NUMBER, 0, q), q);
        read_tokens(g, item_path, &out->raw, &mine->length, mine->tokens);
    }
}

static void read_case(const json_value *c, golden_case *out) {
    char p[PATH], i[PATH];
    const json_value *inputs = field(c, "", "inputs", JSON_OBJECT, 0, i), *ids;
    field(c, "", "description", JSON_STRING, 0, p);
    memset(out, 0, sizeof *out);
    out->raw.vocab = whole(field(inputs, i, "vocab", JSON_NUMBER, 0, p), p, 1, MAX_VOCAB);
    ids = field(inputs, i, "draft_ids", JSON_ARRAY, 0, p);
    need_count(ids, p, 0, MAX_DRAFTS);
    out->raw.drafts = (int)ids->count;
    for (size_t k = 0; k < ids->count; k++)
        out->raw.ids[k] = whole(element(ids, p, k, JSON_NUMBER, 0, i), i, 0, out->raw.vocab - 1);
    read_sampling(inputs, out);
    read_rows(inputs, "inputs", "target_probs", out->raw.drafts + 1, out->raw.vocab, 1,
              out->raw.target);
    read_rows(inputs, "inputs", "draft_probs", out->raw.drafts, out->raw.vocab, 1, out->raw.draft);
    read_expected(c, out);
}

/* ---- checking the implementation against a case read and validated ---- */

static int same_tokens(const int *a, int a_length, const int *b, int b_length) {
    if (a_length != b_length) return 0;
    for (int i = 0; i < a_length; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static int check_case(const golden_case *c, char *why, size_t size) {
    static outcome law[MAX_OUTCOMES];
    int outcomes;
    if (c->refused) {
        if (chain_law(&c->raw, law) == -1) return 1;
        return snprintf(why, size, "non-finite rows were not refused"), 0;
    }
    for (int i = 0; i < c->given; i++) {
        const given_uniforms *g = &c->with[i];
        int emitted[MAX_DRAFTS + 1];
        int length = chain_verify(&c->processed, g->accept, g->draw, emitted);
        if (length < 0 || !same_tokens(emitted, length, g->tokens, g->length))
            return snprintf(why, size, "uniforms #%d: emitted other tokens (accepted %d, "
                            "expected %d)", i, length - 1, g->length - 1), 0;
    }
    outcomes = chain_law(&c->processed, law);
    if (outcomes < 0) return snprintf(why, size, "finite rows were refused"), 0;
    for (int i = 0; i < outcomes; i++) {
        double want = 0.0;
        for (int j = 0; j < c->outcomes; j++)
            if (same_tokens(law[i].tokens, law[i].length, c->law[j].tokens, c->law[j].length))
                want = c->law[j].probability;
        if (fabs(law[i].probability - want) > LAW_TOLERANCE)
            return snprintf(why, size, "outcome #%d: probability %.17g, expected %.17g", i,
                            law[i].probability, want), 0;
    }
    for (int j = 0; j < c->outcomes; j++) {
        int found = 0;
        for (int i = 0; i < outcomes; i++)
            found |= same_tokens(law[i].tokens, law[i].length, c->law[j].tokens, c->law[j].length);
        if (!found) return snprintf(why, size, "law outcome #%d never produced", j), 0;
    }
    return 1;
}

/* The whole file, or NULL; its length in *length. */
static char *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t size = 0, capacity = 0, got;
    if (!f) return NULL;
    do {
        if (size == capacity) {
            char *grown = realloc(text, capacity = capacity ? 2 * capacity : 65536);
            if (!grown) { free(text); fclose(f); return NULL; }
            text = grown;
        }
        got = fread(text + size, 1, capacity - size, f);
        size += got;
    } while (got > 0);
    fclose(f);
    *length = size;
    return text;
}

/* Every case read, validated and checked; refuse() ends it early. */
static int check_all(const json_value *root) {
    static golden_case current;
    char why[640], p[PATH], name_path[PATH];
    const json_value *cases;
    int failed = 0;
    checked(root, "(the top level)", JSON_OBJECT, 0);
    if (strcmp(field(root, "", "format", JSON_STRING, 0, p)->string, "specproof-golden-chain"))
        refuse(p, "not specproof-golden-chain");
    whole(field(root, "", "version", JSON_NUMBER, 0, p), p, 1, 1);
    field(root, "", "convention", JSON_STRING, 0, p);
    cases = field(root, "", "cases", JSON_ARRAY, 0, p);
    need_count(cases, p, 1, (size_t)-1);
    for (size_t i = 0; i < cases->count; i++) {
        const json_value *c, *name;
        int ok;
        case_label[0] = '\0';
        c = element(cases, "cases", i, JSON_OBJECT, 0, p);
        snprintf(case_label, sizeof case_label, "case #%zu: ", i);
        name = field(c, "", "name", JSON_STRING, 0, name_path);
        if (!name->string[0]) refuse(name_path, "empty");
        snprintf(case_label, sizeof case_label, "case #%zu (\"%.60s\"): ", i, name->string);
        read_case(c, &current);
        ok = check_case(&current, why, sizeof why);
        printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name->string, ok ? "" : ": ", ok ? "" : why);
        failed += !ok;
    }
    printf("%zu cases, %d failed\n", cases->count, failed);
    return failed ? 1 : 0;
}

/* check_all, or 2 with the refusal on stderr. */
static int run(const json_value *root, const char *file) {
    if (setjmp(refuse_jump)) {
        fprintf(stderr, "check_golden: %s: %s\n", file, refusal);
        return 2;
    }
    return check_all(root);
}

int main(int argc, char **argv) {
    size_t length = 0;
    char *text, why[640];
    json_value *root;
    int status;
    if (argc != 2) { fprintf(stderr, "usage: check_golden chain_vectors.json\n"); return 2; }
    if (!(text = read_file(argv[1], &length))) {
        fprintf(stderr, "check_golden: cannot read %s\n", argv[1]);
        return 2;
    }
    root = json_parse(text, length, why, sizeof why);
    if (!root) {
        fprintf(stderr, "check_golden: %s: not valid JSON: %s\n", argv[1], why);
        free(text);
        return 2;
    }
    status = run(root, argv[1]);
    json_free(root);
    free(text);
    return status;
}
