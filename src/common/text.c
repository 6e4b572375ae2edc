/* Help text wrapped to a terminal's width: see text.h. */
#include "common/text.h"

#include <stdbool.h>
#include <string.h>

static void pad(FILE *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputc(' ', out);
}

void com_text_wrap(FILE *out, const char *text, size_t col, size_t width)
{
    if (col + 20 > width) { /* no room worth the name: below, indented */
        fputc('\n', out);
        col = 4;
        pad(out, col);
    }
    size_t at = col; /* the column the next character goes to */
    bool first = true;
    const char *p = text;
    for (;;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, " ");
        if (!first && at + 1 + len > width) {
            fputc('\n', out);
            pad(out, col);
            at = col;
        } else if (!first) {
            fputc(' ', out);
            at++;
        }
        fwrite(p, 1, len, out);
        at += len;
        p += len;
        first = false;
    }
    fputc('\n', out);
}
