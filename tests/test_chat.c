/*
 * Chat templates (src/llm/chat.c): the formatted text of one conversation
 * (system, user, assistant, user, assistant with surrounding spaces, user)
 * for every family, as llama.cpp's built-in formatter writes it; detection
 * from short template snippets carrying each family's markers; names; errors.
 */
#include "pxl/llm.h"

#include "check.h"

#include <string.h>

static pxl_ctx *g_ctx;

static const pxl_chat_message k_conv[] = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},
    {"user", "Another question"},
};
#define N_CONV (sizeof k_conv / sizeof k_conv[0])

static const struct {
    const char *name;
    const char *expected; /* with the assistant prompt */
} k_cases[] = {
    {"chatml", "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
               "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
               "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n"
               "<|im_start|>assistant\n"},
    {"llama2", "[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an "
               "assistant   </s>[INST] Another question [/INST]"},
    {"llama2-sys", "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] Who are "
                   "you [/INST]   I am an assistant   </s>[INST] Another question [/INST]"},
    {"llama2-sys-bos", "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s><s>[INST] "
                       "Who are you [/INST]   I am an assistant   </s><s>[INST] Another question [/INST]"},
    {"llama2-sys-strip", "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] "
                         "Who are you [/INST]I am an assistant</s>[INST] Another question [/INST]"},
    {"llama3", "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"mistral-v1", " [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you [/INST]    I "
                   "am an assistant   </s> [INST] Another question [/INST]"},
    {"mistral-v3", "[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>[INST] Who are you[/INST] I am an "
                   "assistant</s>[INST] Another question[/INST]"},
    {"mistral-v3-tekken", "[INST]You are a helpful assistant\n\nHello[/INST]Hi there</s>[INST]Who are you[/INST]   I "
                          "am an assistant   </s>[INST]Another question[/INST]"},
    {"mistral-v7", "[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST] Hi there</s>[INST] "
                   "Who are you[/INST]    I am an assistant   </s>[INST] Another question[/INST]"},
    {"mistral-v7-tekken", "[SYSTEM_PROMPT]You are a helpful assistant[/SYSTEM_PROMPT][INST]Hello[/INST]Hi there</s>"
                          "[INST]Who are you[/INST]   I am an assistant   </s>[INST]Another question[/INST]"},
    {"phi3", "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n"
             "<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother "
             "question<|end|>\n<|assistant|>\n"},
    {"phi4", "<|im_start|>system<|im_sep|>You are a helpful assistant<|im_end|><|im_start|>user<|im_sep|>Hello"
             "<|im_end|><|im_start|>assistant<|im_sep|>Hi there<|im_end|><|im_start|>user<|im_sep|>Who are you"
             "<|im_end|><|im_start|>assistant<|im_sep|>   I am an assistant   <|im_end|><|im_start|>user<|im_sep|>"
             "Another question<|im_end|><|im_start|>assistant<|im_sep|>"},
    {"falcon3", "<|system|>\nYou are a helpful assistant\n<|user|>\nHello\n<|assistant|>\nHi there\n<|user|>\nWho are "
                "you\n<|assistant|>\n   I am an assistant   \n<|user|>\nAnother question\n<|assistant|>\n"},
    {"zephyr", "<|system|>\nYou are a helpful assistant<|endoftext|>\n<|user|>\nHello<|endoftext|>\n<|assistant|>\n"
               "Hi there<|endoftext|>\n<|user|>\nWho are you<|endoftext|>\n<|assistant|>\n   I am an assistant   "
               "<|endoftext|>\n<|user|>\nAnother question<|endoftext|>\n<|assistant|>\n"},
    {"gemma", "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi "
              "there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an "
              "assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n"},
};
#define N_CASES (sizeof k_cases / sizeof k_cases[0])

/* The assistant prompt each family appends (empty: none). */
static const char *assistant_prompt(const char *name) {
    if (!strcmp(name, "chatml")) return "<|im_start|>assistant\n";
    if (!strcmp(name, "llama3")) return "<|start_header_id|>assistant<|end_header_id|>\n\n";
    if (!strcmp(name, "phi4")) return "<|im_start|>assistant<|im_sep|>";
    if (!strcmp(name, "phi3") || !strcmp(name, "falcon3") || !strcmp(name, "zephyr")) return "<|assistant|>\n";
    if (!strcmp(name, "gemma")) return "<start_of_turn>model\n";
    return "";
}

static void test_format(void) {
    CHECK(pxl_chat_template_count() == N_CASES); /* every family has a case */
    for (size_t i = 0; i < N_CASES; i++) {
        const char *name = k_cases[i].name;
        pxl_chat_template t = pxl_chat_template_from_name(name);
        CHECK_MSG(t != PXL_CHAT_TEMPLATE_UNKNOWN, "%s", name);
        CHECK_MSG(!strcmp(pxl_chat_template_name(t), name), "%s", name);
        char *out = NULL;
        size_t len = 0;
        CHECK_MSG(pxl_chat_apply(g_ctx, t, k_conv, N_CONV, 1, &out, &len) == PXL_OK, "%s: %s", name,
                  pxl_ctx_error(g_ctx));
        CHECK_MSG(out && len == strlen(out) && !strcmp(out, k_cases[i].expected), "%s:\n got [%s]\nwant [%s]", name,
                  out ? out : "(null)", k_cases[i].expected);
        pxl_free(g_ctx, out);
        /* without the assistant prompt: the same text less the prompt */
        out = NULL;
        CHECK(pxl_chat_apply(g_ctx, t, k_conv, N_CONV, 0, &out, &len) == PXL_OK);
        const char *ap = assistant_prompt(name);
        size_t el = strlen(k_cases[i].expected), al = strlen(ap);
        CHECK_MSG(out && len + al == el && !memcmp(out, k_cases[i].expected, len) &&
                      !strcmp(k_cases[i].expected + len, ap),
                  "%s without the assistant prompt: [%s]", name, out ? out : "(null)");
        pxl_free(g_ctx, out);
        /* an empty conversation is an empty string, or the prompt alone (llama2: the opening [INST]) */
        out = NULL;
        CHECK(pxl_chat_apply(g_ctx, t, NULL, 0, 1, &out, &len) == PXL_OK);
        CHECK_MSG(out && (!strncmp(name, "llama2", 6) ? !strcmp(out, "[INST] ") : !strcmp(out, ap)), "%s empty: [%s]",
                  name, out ? out : "(null)");
        pxl_free(g_ctx, out);
    }
}

static void test_gemma_system_only_first_user(void) {
    /* the system text goes into the first user turn only; a model turn first does not take it */
    const pxl_chat_message m[] = {{"system", "  S  "}, {"assistant", "A"}, {"user", "U"}, {"user", "V"}};
    char *out = NULL;
    CHECK(pxl_chat_apply(g_ctx, PXL_CHAT_TEMPLATE_GEMMA, m, 4, 0, &out, NULL) == PXL_OK);
    CHECK_MSG(out && !strcmp(out, "<start_of_turn>model\nA<end_of_turn>\n<start_of_turn>user\nS\n\nU<end_of_turn>\n"
                                  "<start_of_turn>user\nV<end_of_turn>\n"),
              "[%s]", out ? out : "(null)");
    pxl_free(g_ctx, out);
}

static void test_detect(void) {
    static const struct {
        const char *snippet;
        pxl_chat_template want;
    } k[] = {
        {"{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}{% endfor %}",
         PXL_CHAT_TEMPLATE_CHATML},
        {"{{'<|im_start|>' + m['role'] + '<|im_sep|>' + m['content'] + '<|im_end|>'}}", PXL_CHAT_TEMPLATE_PHI4},
        {"{{'<|im_start|>' + role}}<end_of_utterance>", PXL_CHAT_TEMPLATE_UNKNOWN}, /* SmolVLM */
        {"{{ bos_token }}{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'] + ' [/INST]' }}{% endif %}",
         PXL_CHAT_TEMPLATE_LLAMA2},
        {"{{ '[INST] <<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' }}", PXL_CHAT_TEMPLATE_LLAMA2_SYS},
        {"{{ bos_token + '[INST] <<SYS>>\\n' + s + '\\n<</SYS>>\\n\\n' }}", PXL_CHAT_TEMPLATE_LLAMA2_SYS_BOS},
        {"{{ '[INST] <<SYS>>\\n' + content.strip() }}", PXL_CHAT_TEMPLATE_LLAMA2_SYS_STRIP},
        {"{{ bos_token }}{{ ' [INST] ' + system_message }}", PXL_CHAT_TEMPLATE_MISTRAL_V1},
        {"{{ '[AVAILABLE_TOOLS] ' + tools }}{{ '[INST] ' + m['content'] + '[/INST]' }}", PXL_CHAT_TEMPLATE_MISTRAL_V3},
        {"{{ '[AVAILABLE_TOOLS]' + tools }}{{ \"[INST]\" + m['content'] + \"[/INST]\" }}",
         PXL_CHAT_TEMPLATE_MISTRAL_V3_TEKKEN},
        {"{{ '[SYSTEM_PROMPT]' + s + '[/SYSTEM_PROMPT]' }}{{ '[INST]' + u + '[/INST]' }}",
         PXL_CHAT_TEMPLATE_MISTRAL_V7},
        {"mistral", PXL_CHAT_TEMPLATE_LLAMA2}, /* a text starting "mistral" without markers: llama2, as llama.cpp */
        {"{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] | trim + '<|eot_id|>' }}",
         PXL_CHAT_TEMPLATE_LLAMA3},
        {"{{'<|' + m['role'] + '|>' + '\\n' + m['content'] + '<|end|>\\n'}}{{ '<|assistant|>\\n' }}",
         PXL_CHAT_TEMPLATE_PHI3},
        {"{{ '<|user|>\\n' + c + eos_token }}{{ '<|assistant|>\\n' }}</s>", PXL_CHAT_TEMPLATE_FALCON3},
        {"{{ '<|user|>\\n' + c }}{{ '<|assistant|>\\n' }}", PXL_CHAT_TEMPLATE_UNKNOWN}, /* glmedge */
        {"{% if m['role'] == 'user' %}{{ '<|user|>\\n' + m['content'] + '<|endoftext|>' }}{% endif %}",
         PXL_CHAT_TEMPLATE_ZEPHYR},
        {"{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}",
         PXL_CHAT_TEMPLATE_GEMMA},
        /* llama.cpp tests vicuna before llama3: such a template is not llama3 */
        {"USER: ASSISTANT: <|start_header_id|><|end_header_id|>", PXL_CHAT_TEMPLATE_UNKNOWN},
        {"{{ message['content'] }}", PXL_CHAT_TEMPLATE_UNKNOWN},
        {"", PXL_CHAT_TEMPLATE_UNKNOWN},
        /* a name in place of the text */
        {"gemma", PXL_CHAT_TEMPLATE_GEMMA},
        {"mistral-v7-tekken", PXL_CHAT_TEMPLATE_MISTRAL_V7_TEKKEN},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        pxl_chat_template t = pxl_chat_template_detect(k[i].snippet, strlen(k[i].snippet));
        CHECK_MSG(t == k[i].want, "snippet %zu [%s]: got %s, want %s", i, k[i].snippet, pxl_chat_template_name(t),
                  pxl_chat_template_name(k[i].want));
    }
    /* the length bounds the search: a marker past len is not seen */
    const char *s = "xx<|im_start|>";
    CHECK(pxl_chat_template_detect(s, 2) == PXL_CHAT_TEMPLATE_UNKNOWN);
    CHECK(pxl_chat_template_detect(s, strlen(s)) == PXL_CHAT_TEMPLATE_CHATML);
    CHECK(pxl_chat_template_detect(NULL, 5) == PXL_CHAT_TEMPLATE_UNKNOWN);
}

static void test_names_and_errors(void) {
    const char *list = pxl_chat_template_list();
    size_t n = pxl_chat_template_count();
    CHECK(pxl_chat_template_name_at(n) == NULL);
    for (size_t i = 0; i < n; i++) {
        const char *name = pxl_chat_template_name_at(i);
        CHECK(name && strstr(list, name));
        if (i) CHECK(strcmp(pxl_chat_template_name_at(i - 1), name) < 0); /* sorted */
        CHECK(pxl_chat_template_from_name(name) != PXL_CHAT_TEMPLATE_UNKNOWN);
    }
    CHECK(pxl_chat_template_from_name("vicuna") == PXL_CHAT_TEMPLATE_UNKNOWN);
    CHECK(pxl_chat_template_from_name("") == PXL_CHAT_TEMPLATE_UNKNOWN);
    CHECK(pxl_chat_template_from_name(NULL) == PXL_CHAT_TEMPLATE_UNKNOWN);
    CHECK(!strcmp(pxl_chat_template_name(PXL_CHAT_TEMPLATE_UNKNOWN), "unknown"));
    CHECK(!strcmp(pxl_chat_template_name((pxl_chat_template)999), "unknown"));

    char *out = (char *)1;
    size_t len = 7;
    CHECK(pxl_chat_apply(g_ctx, PXL_CHAT_TEMPLATE_UNKNOWN, k_conv, N_CONV, 1, &out, &len) == PXL_ERR_INVALID_ARG);
    CHECK(out == NULL && len == 0);
    const char *e = pxl_ctx_error(g_ctx);
    CHECK_MSG(strstr(e, "unknown chat template") && strstr(e, "chatml") && strstr(e, "gemma") && strstr(e, "zephyr"),
              "%s", e);
    CHECK(pxl_chat_apply(g_ctx, (pxl_chat_template)999, k_conv, N_CONV, 1, &out, &len) == PXL_ERR_INVALID_ARG);
    const pxl_chat_message bad[] = {{"user", NULL}};
    CHECK(pxl_chat_apply(g_ctx, PXL_CHAT_TEMPLATE_CHATML, bad, 1, 1, &out, &len) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(g_ctx), "message 0 has a NULL content"));
    CHECK(pxl_chat_apply(g_ctx, PXL_CHAT_TEMPLATE_CHATML, NULL, 1, 1, &out, &len) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_chat_apply(g_ctx, PXL_CHAT_TEMPLATE_CHATML, k_conv, 1, 1, NULL, &len) == PXL_ERR_INVALID_ARG);
}

int main(void) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    if (pxl_ctx_create(&o, &g_ctx) != PXL_OK) {
        fprintf(stderr, "no context\n");
        return 1;
    }
    test_format();
    test_gemma_system_only_first_user();
    test_detect();
    test_names_and_errors();
    pxl_ctx_free(g_ctx);
    if (g_failures) fprintf(stderr, "%d failure(s)\n", g_failures);
    return g_failures ? 1 : 0;
}
