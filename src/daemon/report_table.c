/*
 * The STATUS snapshot as text for `gmux status` and `gmux top`; see
 * report.h. The summary lines wrap between their fields; the task table
 * picks its form for the width: wide (whole headers, sizes to two decimals,
 * exact counts) when it fits, else narrow (sizes and counts in at most 4
 * and 5 columns, short headers), the name cut with "..." last. The pinned
 * bytes (PINNED, PIN) have their column only while a task pins any, so a
 * daemon whose tasks pin nothing shows the table as before; in a refreshing
 * view (dmn_report_table_keep) it stays once it appeared. Widths are
 * counted in code points (a name may hold UTF-8): one column each, so a
 * double-width character (CJK) takes one column more than counted and
 * shifts the rest of its row; no wcwidth, which depends on the locale.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "common/parse.h"
#include "daemon/report.h"

/* Names are cut no shorter than this, even past the width. */
#define TABLE_NAME_MIN 8
/* The wide form is taken when it fits with names of this length (or the
 * longest, if shorter). */
#define TABLE_NAME_WIDE 16

enum {
    COL_ID,
    COL_PID,
    COL_NAME,
    COL_STATE,
    COL_CLASS,
    COL_PRI,
    COL_RES,
    COL_PIN, /* only while a task pins memory (has_pin), or kept */
    COL_TOTAL,
    COL_FAULTS,
    COL_MIGR,
    COL_KERNELS,
    COL_SHARE,
    COL_COUNT
};

static const char *const head_wide[COL_COUNT] = {
    "ID",     "PID",   "NAME",   "STATE",    "CLASS",   "PRI",  "RESIDENT",
    "PINNED", "TOTAL", "FAULTS", "MIGRATED", "KERNELS", "SHARE"};
static const char *const head_narrow[COL_COUNT] = {"ID",   "PID",     "NAME", "STATE", "CLASS",
                                                   "PRI",  "RES",     "PIN",  "TOTAL", "FAULTS",
                                                   "MIGR", "KERNELS", "SHARE"};

typedef char cell_t[40];

/* Whether byte b continues a UTF-8 sequence (takes no column of its own). */
static bool continues(char b)
{
    return ((unsigned char)b & 0xC0) == 0x80;
}

/* The columns text takes: its code points. */
static size_t cols(const char *text)
{
    size_t n = 0;
    for (; *text; text++)
        n += !continues(*text);
    return n;
}

/* The byte offset where text's column col starts (its end, if shorter). */
static size_t col_offset(const char *text, size_t col)
{
    size_t i = 0;
    for (size_t n = 0; text[i]; i++) {
        if (!continues(text[i]) && n++ == col)
            break;
    }
    return i;
}

/* The cells of task t's row, in the wide form or the narrow one. */
static void row_cells(const dmn_status_task_t *t, bool wide, cell_t c[COL_COUNT])
{
    const char *(*size)(uint64_t, char *, unsigned) =
        wide ? com_format_size : com_format_size_short;
    snprintf(c[COL_ID], sizeof(cell_t), "%u", t->id);
    snprintf(c[COL_PID], sizeof(cell_t), "%u", t->pid);
    snprintf(c[COL_NAME], sizeof(cell_t), "%.*s", (int)(DMN_NAME_MAX - 1), t->name);
    snprintf(c[COL_STATE], sizeof(cell_t), "%s", dmn_state_name(t->state));
    snprintf(c[COL_CLASS], sizeof(cell_t), "%s", dmn_class_name(t->cls));
    snprintf(c[COL_PRI], sizeof(cell_t), "%d", t->priority);
    size(t->resident, c[COL_RES], sizeof(cell_t));
    size(t->pinned, c[COL_PIN], sizeof(cell_t));
    size(t->total, c[COL_TOTAL], sizeof(cell_t));
    size(t->migrated, c[COL_MIGR], sizeof(cell_t));
    if (wide) {
        snprintf(c[COL_FAULTS], sizeof(cell_t), "%llu", (unsigned long long)t->faults);
        snprintf(c[COL_KERNELS], sizeof(cell_t), "%llu", (unsigned long long)t->kernels);
    } else {
        com_format_count_short(t->faults, c[COL_FAULTS], sizeof(cell_t));
        com_format_count_short(t->kernels, c[COL_KERNELS], sizeof(cell_t));
    }
    snprintf(c[COL_SHARE], sizeof(cell_t), "%.1f%%", 100.0 * dmn_report_share(t));
}

/* Whether any task of r pins device memory (the PIN column is shown). */
static bool has_pin(const dmn_report_t *r)
{
    for (uint32_t i = 0; i < r->n_tasks; i++)
        if (r->tasks[i].pinned)
            return true;
    return false;
}

/* Each column's width in the form asked: its header or its widest cell; 0
 * for a column left out (PIN unless pin). Returns the width of the row
 * apart from the name and its blank. */
static size_t col_widths(const dmn_report_t *r, bool wide, bool pin, size_t w[COL_COUNT])
{
    const char *const *head = wide ? head_wide : head_narrow;
    for (int k = 0; k < COL_COUNT; k++)
        w[k] = cols(head[k]);
    for (uint32_t i = 0; i < r->n_tasks; i++) {
        cell_t c[COL_COUNT];
        row_cells(&r->tasks[i], wide, c);
        for (int k = 0; k < COL_COUNT; k++)
            if (cols(c[k]) > w[k])
                w[k] = cols(c[k]);
    }
    if (!pin)
        w[COL_PIN] = 0;
    size_t rest = 0;
    for (int k = 0; k < COL_COUNT; k++)
        if (w[k] && k != COL_NAME)
            rest += w[k] + 1; /* and its blank: the name's stands for the first's */
    return rest;
}

/* One row: text columns left-aligned, numbers right-aligned, the name cut
 * to w[COL_NAME] with "..." last; a column of width 0 left out. */
static void put_row(FILE *out, cell_t c[COL_COUNT], const size_t w[COL_COUNT])
{
    for (int k = 0; k < COL_COUNT; k++) {
        if (w[k] == 0)
            continue;
        if (k > 0)
            fputc(' ', out);
        bool left = k == COL_NAME || k == COL_STATE || k == COL_CLASS;
        size_t n = cols(c[k]);
        if (k == COL_NAME && n > w[k] && w[k] > 3) { /* at a character's start */
            memcpy(c[k] + col_offset(c[k], w[k] - 3), "...", 4);
            n = w[k];
        }
        /* padded by columns, not bytes (printf's width counts bytes) */
        int pad = (int)(w[k] > n ? w[k] - n : 0);
        if (!left)
            fprintf(out, "%*s", pad, "");
        fputs(c[k], out);
        if (left)
            fprintf(out, "%*s", pad, "");
    }
    fputc('\n', out);
}

static void put_table(FILE *out, const dmn_report_t *r, unsigned width, bool pin)
{
    size_t w[COL_COUNT];
    bool wide = true;
    size_t rest = col_widths(r, true, pin, w);
    size_t name = w[COL_NAME] < TABLE_NAME_WIDE ? w[COL_NAME] : TABLE_NAME_WIDE;
    if (rest + name > width) {
        wide = false;
        rest = col_widths(r, false, pin, w);
    }
    /* the name takes what is left, up to its longest */
    size_t room = width > rest ? width - rest : 0;
    if (w[COL_NAME] > room) {
        size_t least = w[COL_NAME] < TABLE_NAME_MIN ? w[COL_NAME] : TABLE_NAME_MIN;
        w[COL_NAME] = room > least ? room : least;
    }
    cell_t c[COL_COUNT];
    for (int k = 0; k < COL_COUNT; k++)
        snprintf(c[k], sizeof(cell_t), "%s", (wide ? head_wide : head_narrow)[k]);
    put_row(out, c, w);
    for (uint32_t i = 0; i < r->n_tasks; i++) {
        row_cells(&r->tasks[i], wide, c);
        put_row(out, c, w);
    }
}

/* The fields of one summary line. */
typedef struct fields {
    char text[8][160];
    int n;
} fields_t;

/* Adds one field to *fl (printf-style). */
__attribute__((format(printf, 2, 3))) static void field(fields_t *fl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fl->text[fl->n++], sizeof(fl->text[0]), fmt, ap);
    va_end(ap);
}

/* The fields two blanks apart, a further line (two blanks in) wherever the
 * next would pass width; a field wider than that stands alone. Empties fl. */
static void put_fields(FILE *out, fields_t *fl, unsigned width)
{
    size_t col = 0;
    for (int i = 0; i < fl->n; i++) {
        size_t len = cols(fl->text[i]);
        if (i > 0 && col + 2 + len > width) {
            fputs("\n  ", out);
            col = 2;
        } else if (i > 0) {
            fputs("  ", out);
            col += 2;
        }
        fputs(fl->text[i], out);
        col += len;
    }
    fputc('\n', out);
    fl->n = 0;
}

void dmn_report_table(FILE *out, const char *path, const dmn_report_t *r, unsigned width)
{
    dmn_report_table_keep(out, path, r, width, NULL);
}

void dmn_report_table_keep(FILE *out, const char *path, const dmn_report_t *r, unsigned width,
                           dmn_table_keep_t *keep)
{
    bool pin = has_pin(r) || (keep && keep->pin);
    if (keep)
        keep->pin = pin;
    fields_t fl = {.n = 0};
    char a[32], b[32], c[32];
    field(&fl, "gmuxd %s", path);
    if (r->daemon_pid > 0)
        field(&fl, "pid %d", (int)r->daemon_pid);
    else
        field(&fl, "pid ?");
    field(&fl, "up %s", com_format_duration(r->uptime_ns, a, sizeof(a)));
    field(&fl, "tasks %u", r->n_tasks);
    field(&fl, "switches %llu", (unsigned long long)r->switches);
    field(&fl, "reclaimed %llu", (unsigned long long)r->reclaimed);
    put_fields(out, &fl, width);
    field(&fl, "mode %s", dmn_mode_name(r->mode));
    com_format_size(r->footprint, a, sizeof(a));
    /* the capacity comes from the tasks' devices: none yet, or no task reports one */
    if (r->capacity)
        field(&fl, "footprints %s of %s", a, com_format_size(r->capacity, b, sizeof(b)));
    else
        field(&fl, "footprints %s (device memory not reported by any task)", a);
    field(&fl, "mode changes %llu", (unsigned long long)r->mode_changes);
    put_fields(out, &fl, width);
    if (r->evict_bytes || r->fill_bytes || r->ahead_bytes) {
        field(&fl, "planned");
        field(&fl, "evict %s", com_format_size(r->evict_bytes, a, sizeof(a)));
        field(&fl, "fill %s", com_format_size(r->fill_bytes, b, sizeof(b)));
        field(&fl, "ahead %s in %llu of %llu switches",
              com_format_size(r->ahead_bytes, c, sizeof(c)), (unsigned long long)r->ahead_plans,
              (unsigned long long)r->switches);
        put_fields(out, &fl, width);
    }
    if (r->evict_waits) {
        field(&fl, "evict waits");
        field(&fl, "%llu switches, %llu gave up", (unsigned long long)r->evict_waits,
              (unsigned long long)r->evict_timeouts);
        field(&fl, "%.1f ms in all, %.1f ms at most", (double)r->evict_wait_ns / 1e6,
              (double)r->evict_wait_max_ns / 1e6);
        put_fields(out, &fl, width);
    }
    fputc('\n', out);
    put_table(out, r, width, pin);
}
