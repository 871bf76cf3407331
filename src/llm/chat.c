/*
 * Chat templates: recognising a model's tokenizer.chat_template (Jinja text)
 * by the markers each family's template contains, and formatting a
 * conversation the way llama.cpp's built-in formatter does for that family
 * (its llm_chat_detect_template and llm_chat_apply_template). This is not a
 * Jinja interpreter: a template is only ever recognised, never run.
 *
 * Detection tests the markers in llama.cpp's order, including those of
 * families pxl does not format (phi4's "<|im_sep|>" inside a chatml-looking
 * template, glmedge, monarch, orion, ...): such a template is "unknown"
 * rather than mistaken for a later family whose marker it also contains.
 *
 * BOS is never written here (the tokenizer adds it), as in llama.cpp.
 */
#include "../core/internal.h"
#include "pxl/llm.h"

#include <string.h>

static const struct {
    const char *name;
    pxl_chat_template t;
} k_templates[] = {
    /* sorted by name: the order of the list in messages */
    {"chatml", PXL_CHAT_TEMPLATE_CHATML},
    {"falcon3", PXL_CHAT_TEMPLATE_FALCON3},
    {"gemma", PXL_CHAT_TEMPLATE_GEMMA},
    {"llama2", PXL_CHAT_TEMPLATE_LLAMA2},
    {"llama2-sys", PXL_CHAT_TEMPLATE_LLAMA2_SYS},
    {"llama2-sys-bos", PXL_CHAT_TEMPLATE_LLAMA2_SYS_BOS},
    {"llama2-sys-strip", PXL_CHAT_TEMPLATE_LLAMA2_SYS_STRIP},
    {"llama3", PXL_CHAT_TEMPLATE_LLAMA3},
    {"mistral-v1", PXL_CHAT_TEMPLATE_MISTRAL_V1},
    {"mistral-v3", PXL_CHAT_TEMPLATE_MISTRAL_V3},
    {"mistral-v3-tekken", PXL_CHAT_TEMPLATE_MISTRAL_V3_TEKKEN},
    {"mistral-v7", PXL_CHAT_TEMPLATE_MISTRAL_V7},
    {"mistral-v7-tekken", PXL_CHAT_TEMPLATE_MISTRAL_V7_TEKKEN},
    {"phi3", PXL_CHAT_TEMPLATE_PHI3},
    {"phi4", PXL_CHAT_TEMPLATE_PHI4},
    {"zephyr", PXL_CHAT_TEMPLATE_ZEPHYR},
};
#define N_TEMPLATES (sizeof k_templates / sizeof k_templates[0])

static const char k_list[] = "chatml, falcon3, gemma, llama2, llama2-sys, llama2-sys-bos, llama2-sys-strip, llama3, "
                             "mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, mistral-v7-tekken, phi3, phi4, "
                             "zephyr";

size_t pxl_chat_template_count(void) { return N_TEMPLATES; }

const char *pxl_chat_template_name_at(size_t i) { return i < N_TEMPLATES ? k_templates[i].name : NULL; }

const char *pxl_chat_template_list(void) { return k_list; }

const char *pxl_chat_template_name(pxl_chat_template t) {
    for (size_t i = 0; i < N_TEMPLATES; i++)
        if (k_templates[i].t == t) return k_templates[i].name;
    return "unknown";
}

pxl_chat_template pxl_chat_template_from_name(const char *name) {
    if (!name) return PXL_CHAT_TEMPLATE_UNKNOWN;
    for (size_t i = 0; i < N_TEMPLATES; i++)
        if (strcmp(k_templates[i].name, name) == 0) return k_templates[i].t;
    return PXL_CHAT_TEMPLATE_UNKNOWN;
}

/* ---- detection -------------------------------------------------------------------------- */

typedef struct {
    const char *s;
    size_t n;
} text;

static int has(text t, const char *needle) {
    size_t m = strlen(needle);
    if (m == 0) return 1;
    if (m > t.n) return 0;
    for (size_t i = 0; i + m <= t.n; i++)
        if (t.s[i] == needle[0] && memcmp(t.s + i, needle, m) == 0) return 1;
    return 0;
}

static pxl_chat_template detect_inst(text t) {
    if (has(t, "[SYSTEM_PROMPT]")) return PXL_CHAT_TEMPLATE_MISTRAL_V7;
    /* Mistral's official v1 (system prepended to the first [INST]), v3 and v3-tekken (tools) */
    if (has(t, "' [INST] ' + system_message") || has(t, "[AVAILABLE_TOOLS]")) {
        if (has(t, " [INST]")) return PXL_CHAT_TEMPLATE_MISTRAL_V1;
        if (has(t, "\"[INST]\"")) return PXL_CHAT_TEMPLATE_MISTRAL_V3_TEKKEN;
        return PXL_CHAT_TEMPLATE_MISTRAL_V3;
    }
    /* llama2 and its variants */
    if (has(t, "content.strip()")) return PXL_CHAT_TEMPLATE_LLAMA2_SYS_STRIP;
    if (has(t, "bos_token + '[INST]")) return PXL_CHAT_TEMPLATE_LLAMA2_SYS_BOS;
    if (has(t, "<<SYS>>")) return PXL_CHAT_TEMPLATE_LLAMA2_SYS;
    return PXL_CHAT_TEMPLATE_LLAMA2;
}

pxl_chat_template pxl_chat_template_detect(const char *jinja, size_t len) {
    if (!jinja) return PXL_CHAT_TEMPLATE_UNKNOWN;
    text t = {jinja, len};
    /* a template's name in place of its text (as llama.cpp accepts) */
    for (size_t i = 0; i < N_TEMPLATES; i++) {
        size_t m = strlen(k_templates[i].name);
        if (m == len && memcmp(k_templates[i].name, jinja, m) == 0) return k_templates[i].t;
    }
    const pxl_chat_template U = PXL_CHAT_TEMPLATE_UNKNOWN;
    if (has(t, "<|im_start|>")) {
        if (has(t, "<|im_sep|>")) return PXL_CHAT_TEMPLATE_PHI4;
        if (has(t, "<end_of_utterance>")) return U; /* SmolVLM: <|im_start|> is its BOS, not chatml */
        return PXL_CHAT_TEMPLATE_CHATML;
    }
    if ((len >= 7 && memcmp(jinja, "mistral", 7) == 0) || has(t, "[INST]")) return detect_inst(t);
    if (has(t, "<|assistant|>") && has(t, "<|end|>")) return PXL_CHAT_TEMPLATE_PHI3;
    if (has(t, "[gMASK]<sop>")) return U; /* chatglm4 */
    if (has(t, "<|assistant|>") && has(t, "<|user|>")) {
        if (has(t, "<|tool_declare|>")) return U;              /* exaone-moe */
        return has(t, "</s>") ? PXL_CHAT_TEMPLATE_FALCON3 : U; /* else glmedge */
    }
    if (has(t, "<|{{ item['role'] }}|>") && has(t, "<|begin_of_image|>")) return U; /* glmedge */
    if (has(t, "<|user|>") && has(t, "<|endoftext|>")) return PXL_CHAT_TEMPLATE_ZEPHYR;
    if (has(t, "bos_token + message['role']")) return U; /* monarch */
    if (has(t, "<start_of_turn>")) return PXL_CHAT_TEMPLATE_GEMMA;
    /* families llama.cpp tests before llama3, which pxl does not format */
    if (has(t, "'\\n\\nAssistant: ' + eos_token")) return U;                                  /* orion */
    if (has(t, "GPT4 Correct ")) return U;                                                    /* openchat */
    if (has(t, "USER: ") && has(t, "ASSISTANT: ")) return U;                                  /* vicuna */
    if (has(t, "### Instruction:") && has(t, "<|EOT|>")) return U;                           /* deepseek */
    if (has(t, "<|START_OF_TURN_TOKEN|>") && has(t, "<|USER_TOKEN|>")) return U;             /* command-r */
    if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return PXL_CHAT_TEMPLATE_LLAMA3;
    return U;
}

/* ---- formatting ------------------------------------------------------------------------- */

typedef struct {
    pxl_ctx *ctx;
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put_n(sbuf *b, const char *s, size_t n) {
    if (b->oom || n == 0) return;
    if (n > SIZE_MAX - b->n - 1) {
        b->oom = 1;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap = cap > SIZE_MAX / 2 ? b->n + n + 1 : cap * 2;
        char *p = pxl_realloc(b->ctx, b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void put(sbuf *b, const char *s) { put_n(b, s, strlen(s)); }

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/* s without leading and trailing whitespace (C locale isspace) */
static text trimmed(const char *s) {
    size_t n = strlen(s), a = 0;
    while (a < n && is_space(s[a])) a++;
    while (n > a && is_space(s[n - 1])) n--;
    text t = {s + a, n - a};
    return t;
}

static void put_trim(sbuf *b, const char *s) {
    text t = trimmed(s);
    put_n(b, t.s, t.n);
}

static int is_role(const pxl_chat_message *m, const char *role) { return strcmp(m->role, role) == 0; }

static void fmt_mistral_v7(sbuf *b, const pxl_chat_message *m, size_t n, int tekken) {
    const char *sp = tekken ? "" : " ";
    for (size_t i = 0; i < n; i++) {
        if (is_role(&m[i], "system")) {
            put(b, "[SYSTEM_PROMPT]");
            put(b, sp);
            put(b, m[i].content);
            put(b, "[/SYSTEM_PROMPT]");
        } else if (is_role(&m[i], "user")) {
            put(b, "[INST]");
            put(b, sp);
            put(b, m[i].content);
            put(b, "[/INST]");
        } else {
            put(b, sp);
            put(b, m[i].content);
            put(b, "</s>");
        }
    }
}

static void fmt_mistral_v1v3(sbuf *b, const pxl_chat_message *m, size_t n, pxl_chat_template t) {
    const char *lead = t == PXL_CHAT_TEMPLATE_MISTRAL_V1 ? " " : "";
    const char *trail = t == PXL_CHAT_TEMPLATE_MISTRAL_V3_TEKKEN ? "" : " ";
    int in_turn = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in_turn) {
            put(b, lead);
            put(b, "[INST]");
            put(b, trail);
            in_turn = 1;
        }
        if (is_role(&m[i], "system")) {
            put(b, m[i].content);
            put(b, "\n\n");
        } else if (is_role(&m[i], "user")) {
            put(b, m[i].content);
            put(b, lead);
            put(b, "[/INST]");
        } else {
            put(b, trail);
            if (t == PXL_CHAT_TEMPLATE_MISTRAL_V3) put_trim(b, m[i].content);
            else put(b, m[i].content);
            put(b, "</s>");
            in_turn = 0;
        }
    }
}

static void fmt_llama2(sbuf *b, const pxl_chat_message *m, size_t n, pxl_chat_template t) {
    int sys = t != PXL_CHAT_TEMPLATE_LLAMA2;
    int bos_inside = t == PXL_CHAT_TEMPLATE_LLAMA2_SYS_BOS;
    int strip = t == PXL_CHAT_TEMPLATE_LLAMA2_SYS_STRIP;
    int in_turn = 1; /* the first [INST] goes without BOS: the tokenizer adds it */
    put(b, "[INST] ");
    for (size_t i = 0; i < n; i++) {
        text c = strip ? trimmed(m[i].content) : (text){m[i].content, strlen(m[i].content)};
        if (!in_turn) {
            in_turn = 1;
            put(b, bos_inside ? "<s>[INST] " : "[INST] ");
        }
        if (is_role(&m[i], "system")) {
            if (sys) put(b, "<<SYS>>\n");
            put_n(b, c.s, c.n);
            put(b, sys ? "\n<</SYS>>\n\n" : "\n");
        } else if (is_role(&m[i], "user")) {
            put_n(b, c.s, c.n);
            put(b, " [/INST]");
        } else {
            put_n(b, c.s, c.n);
            put(b, "</s>");
            in_turn = 0;
        }
    }
}

/* "<|role|>\n" content end, for every message; then "<|assistant|>\n" */
static void fmt_tagged(sbuf *b, const pxl_chat_message *m, size_t n, const char *end, int add_ass) {
    for (size_t i = 0; i < n; i++) {
        put(b, "<|");
        put(b, m[i].role);
        put(b, "|>\n");
        put(b, m[i].content);
        put(b, end);
    }
    if (add_ass) put(b, "<|assistant|>\n");
}

static void fmt_gemma(sbuf *b, const pxl_chat_message *m, size_t n, int add_ass) {
    /* gemma has no system role: system texts (trimmed, concatenated) open the next non-model turn */
    sbuf sys = {b->ctx, NULL, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        if (is_role(&m[i], "system")) {
            put_trim(&sys, m[i].content);
            continue;
        }
        int model = is_role(&m[i], "assistant");
        put(b, "<start_of_turn>");
        put(b, model ? "model" : m[i].role);
        put(b, "\n");
        if (sys.n && !model) {
            put_n(b, sys.p, sys.n);
            put(b, "\n\n");
            sys.n = 0;
        }
        put_trim(b, m[i].content);
        put(b, "<end_of_turn>\n");
    }
    if (add_ass) put(b, "<start_of_turn>model\n");
    if (sys.oom) b->oom = 1;
    pxl_free(b->ctx, sys.p);
}

pxl_status pxl_chat_apply(pxl_ctx *ctx, pxl_chat_template tmpl, const pxl_chat_message *msgs, size_t n,
                          int add_assistant_prompt, char **out, size_t *len) {
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!ctx) return PXL_ERR_INVALID_ARG;
    if (!out || (n && !msgs))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_chat_apply: %s is NULL", !out ? "out" : "msgs");
    if (strcmp(pxl_chat_template_name(tmpl), "unknown") == 0)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_chat_apply: unknown chat template (%d); known: %s", (int)tmpl,
                        k_list);
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_chat_apply: message %zu has a NULL %s", i,
                            !msgs[i].role ? "role" : "content");
    sbuf b = {ctx, NULL, 0, 0, 0};
    int ass = add_assistant_prompt != 0;
    switch (tmpl) {
    case PXL_CHAT_TEMPLATE_CHATML:
        for (size_t i = 0; i < n; i++) {
            put(&b, "<|im_start|>");
            put(&b, msgs[i].role);
            put(&b, "\n");
            put(&b, msgs[i].content);
            put(&b, "<|im_end|>\n");
        }
        if (ass) put(&b, "<|im_start|>assistant\n");
        break;
    case PXL_CHAT_TEMPLATE_PHI4:
        for (size_t i = 0; i < n; i++) {
            put(&b, "<|im_start|>");
            put(&b, msgs[i].role);
            put(&b, "<|im_sep|>");
            put(&b, msgs[i].content);
            put(&b, "<|im_end|>");
        }
        if (ass) put(&b, "<|im_start|>assistant<|im_sep|>");
        break;
    case PXL_CHAT_TEMPLATE_LLAMA3:
        for (size_t i = 0; i < n; i++) {
            put(&b, "<|start_header_id|>");
            put(&b, msgs[i].role);
            put(&b, "<|end_header_id|>\n\n");
            put_trim(&b, msgs[i].content);
            put(&b, "<|eot_id|>");
        }
        if (ass) put(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case PXL_CHAT_TEMPLATE_MISTRAL_V7:
    case PXL_CHAT_TEMPLATE_MISTRAL_V7_TEKKEN:
        fmt_mistral_v7(&b, msgs, n, tmpl == PXL_CHAT_TEMPLATE_MISTRAL_V7_TEKKEN);
        break;
    case PXL_CHAT_TEMPLATE_MISTRAL_V1:
    case PXL_CHAT_TEMPLATE_MISTRAL_V3:
    case PXL_CHAT_TEMPLATE_MISTRAL_V3_TEKKEN:
        fmt_mistral_v1v3(&b, msgs, n, tmpl);
        break;
    case PXL_CHAT_TEMPLATE_LLAMA2:
    case PXL_CHAT_TEMPLATE_LLAMA2_SYS:
    case PXL_CHAT_TEMPLATE_LLAMA2_SYS_BOS:
    case PXL_CHAT_TEMPLATE_LLAMA2_SYS_STRIP:
        fmt_llama2(&b, msgs, n, tmpl);
        break;
    case PXL_CHAT_TEMPLATE_PHI3: fmt_tagged(&b, msgs, n, "<|end|>\n", ass); break;
    case PXL_CHAT_TEMPLATE_FALCON3: fmt_tagged(&b, msgs, n, "\n", ass); break;
    case PXL_CHAT_TEMPLATE_ZEPHYR: fmt_tagged(&b, msgs, n, "<|endoftext|>\n", ass); break;
    case PXL_CHAT_TEMPLATE_GEMMA: fmt_gemma(&b, msgs, n, ass); break;
    case PXL_CHAT_TEMPLATE_UNKNOWN:
    default: break; /* refused above */
    }
    if (!b.oom && !b.p) { /* nothing written: an empty string */
        b.p = pxl_alloc(ctx, 1);
        if (b.p) b.p[0] = 0;
        else b.oom = 1;
    }
    if (b.oom) {
        pxl_free(ctx, b.p);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_chat_apply: out of memory");
    }
    *out = b.p;
    if (len) *len = b.n;
    return PXL_OK;
}
