/*
 * libFuzzer target: the parameter parser (src/base/param.c, src/base/settings.c).
 *
 * The input, as text, is the `settings` of a hiar_config_t
 * ("NAME=value;NAME=value" or lines), loaded over the defaults the way
 * hiar_comm_create loads it; the same text also goes, as a value, through
 * hiar_param_parse of every parameter.  Besides memory errors (ASan, UBSan),
 * it checks:
 *   - a successful load leaves every parameter with a text that parses back
 *     to the same number (what hiar-info prints is what is used);
 *   - a failure leaves a message in hiar_last_error(); a rejected value's
 *     message names the parameter.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "base/settings.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("HIAR_DEBUG", "NONE", 1); /* warnings about the fuzzed values would flood the log */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    hiar_params_t p;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (hiar_params_load(&p, text) == HIAR_SUCCESS) {
        for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
            long long num = -1;
            FUZZ_CHECK(p.v[i].text != NULL, "%s has no text", hiar_param_table[i].name);
            FUZZ_CHECK(hiar_param_parse((hiar_param_id_t)i, p.v[i].text, &num) == HIAR_SUCCESS &&
                           num == p.v[i].num,
                       "%s=\"%s\" was accepted as %lld but parses to %lld", hiar_param_table[i].name,
                       p.v[i].text, p.v[i].num, num);
            FUZZ_CHECK(p.v[i].num >= 0, "%s=\"%s\" gave %lld", hiar_param_table[i].name, p.v[i].text,
                       p.v[i].num);
        }
        hiar_params_free(&p);
    } else {
        FUZZ_CHECK(hiar_last_error()[0] != '\0', "a failed load left no message");
    }
    for (int i = 0; i < HIAR_PARAM_COUNT; i++) {
        long long num = -1;
        if (hiar_param_parse((hiar_param_id_t)i, text, &num) != HIAR_SUCCESS)
            FUZZ_CHECK(strstr(hiar_last_error(), hiar_param_table[i].name) != NULL,
                       "the message \"%s\" does not name %s", hiar_last_error(), hiar_param_table[i].name);
        else
            FUZZ_CHECK(num >= 0, "%s=\"%s\" parsed to %lld", hiar_param_table[i].name, text, num);
    }
    free(text);
    return 0;
}
