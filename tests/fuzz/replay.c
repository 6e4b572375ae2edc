/*
 * Driver for libFuzzer harnesses in ordinary builds: feeds every file of the
 * corpus directories named on the command line to LLVMFuzzerTestOneInput,
 * then a fixed number of seeded mutations of them (byte flips, truncations,
 * insertions), so that every CTest run exercises the parser on hostile input
 * without libFuzzer. Deterministic: the same corpus gives the same inputs.
 * Set GMUX_FUZZ_ITERATIONS to change the number of mutations.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trand.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
    uint8_t *data;
    size_t size;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static int load_dir(const char *dir, struct input **inputs, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open corpus %s\n", dir);
        return -1;
    }
    struct dirent *e;
    char **names = NULL;
    size_t nn = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        names = realloc(names, (nn + 1) * sizeof(*names));
        names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    /* Sorted, so the mutation sequence does not depend on directory order. */
    for (size_t i = 0; i < nn; i++)
        for (size_t j = i + 1; j < nn; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (size_t i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "rb");
        free(names[i]);
        if (!f)
            continue;
        struct input in = {NULL, 0};
        uint8_t buf[65536];
        size_t r;
        while ((r = fread(buf, 1, sizeof(buf), f)) > 0) {
            in.data = realloc(in.data, in.size + r);
            memcpy(in.data + in.size, buf, r);
            in.size += r;
        }
        fclose(f);
        *inputs = realloc(*inputs, (*count + 1) * sizeof(**inputs));
        (*inputs)[(*count)++] = in;
    }
    free(names);
    return 0;
}

int main(int argc, char **argv)
{
    struct input *inputs = NULL;
    size_t count = 0;
    for (int i = 1; i < argc; i++)
        if (load_dir(argv[i], &inputs, &count) != 0)
            return 1;
    for (size_t i = 0; i < count; i++)
        LLVMFuzzerTestOneInput(inputs[i].data, inputs[i].size);
    long iters = 20000;
    const char *env = getenv("GMUX_FUZZ_ITERATIONS");
    if (env)
        iters = strtol(env, NULL, 10);
    for (long it = 0; it < iters && count > 0; it++) {
        struct input *src = &inputs[trand_next(&rng) % count];
        size_t size = src->size + 16;
        uint8_t *buf = malloc(size ? size : 1);
        memcpy(buf, src->data, src->size);
        size_t len = src->size;
        int edits = 1 + (int)(trand_next(&rng) % 4);
        for (int k = 0; k < edits; k++) {
            switch (trand_next(&rng) % 4) {
            case 0: /* flip a byte */
                if (len)
                    buf[trand_next(&rng) % len] ^= (uint8_t)(1u << (trand_next(&rng) % 8));
                break;
            case 1: /* truncate */
                if (len)
                    len = trand_next(&rng) % len;
                break;
            case 2: /* insert an interesting byte */
                if (len < size) {
                    static const uint8_t interesting[] = {0,   0xff, '\n', ' ', '=', '-',
                                                          '.', '9',  0x7f, '#', ':', ','};
                    size_t at = len ? trand_next(&rng) % (len + 1) : 0;
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = interesting[trand_next(&rng) % sizeof(interesting)];
                    len++;
                }
                break;
            default: /* overwrite with a random byte */
                if (len)
                    buf[trand_next(&rng) % len] = (uint8_t)trand_next(&rng);
                break;
            }
        }
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
    }
    for (size_t i = 0; i < count; i++)
        free(inputs[i].data);
    free(inputs);
    printf("replay: %zu corpus inputs, %ld mutations: no crash\n", count, iters);
    return 0;
}
