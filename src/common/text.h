/* Text for terminals: help tables whose last column wraps under itself. */
#ifndef GMUX_COMMON_TEXT_H
#define GMUX_COMMON_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Help output fits this many columns (a terminal's classic width). */
#define COM_TEXT_WIDTH 80

/*
 * Writes text from column col (what precedes it on the line already
 * written), one paragraph (no newline in it), breaking it at blanks so
 * that no line passes width columns; each further line starts with col
 * blanks. A word longer than the room stands alone on its line (never
 * cut); blanks between words become one; a newline ends the last line.
 * col past width - 20: the text starts on the next line instead, at 4
 * blanks.
 */
void com_text_wrap(FILE *out, const char *text, size_t col, size_t width);

#endif
