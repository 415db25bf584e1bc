/* Host phase marks of calls (base/marks.h). */
#include <stdio.h>
#include <string.h>

#include "base/marks.h"

void hiar_marks_begin(hiar_marks_t *m, uint64_t t0)
{
    if (m)
        m->last = t0;
}

/* The phase's index: its slot, a new one, or the last when all are taken. */
static int phase_of(hiar_marks_t *m, const char *phase)
{
    for (int i = 0; i < m->n; i++)
        if (m->phase[i] == phase || strcmp(m->phase[i], phase) == 0)
            return i;
    if (m->n == HIAR_MARKS_MAX)
        return HIAR_MARKS_MAX - 1;
    m->phase[m->n] = phase;
    return m->n++;
}

void hiar_marks_stamp(hiar_marks_t *m, const char *phase)
{
    uint64_t now;

    if (!m)
        return;
    now = hiar_now_ns();
    m->call[phase_of(m, phase)] += now - m->last;
    m->last = now;
}

void hiar_marks_end(hiar_marks_t *m, const char *phase)
{
    if (!m)
        return;
    hiar_marks_stamp(m, phase);
    for (int i = 0; i < m->n; i++) {
        m->ns[i] += m->call[i];
        m->max[i] = m->call[i] > m->max[i] ? m->call[i] : m->max[i];
        m->call[i] = 0;
    }
    m->calls++;
}

void hiar_marks_report(const hiar_marks_t *m, char *out, size_t len)
{
    size_t at;
    uint64_t total = 0;

    if (!m->calls) {
        snprintf(out, len, "no calls");
        return;
    }
    at = (size_t)snprintf(out, len, "%llu calls, us per call:", (unsigned long long)m->calls);
    for (int i = 0; i < m->n && at < len; i++) {
        total += m->ns[i];
        at += (size_t)snprintf(out + at, len - at, "%s %s %.2f (max %.2f)", i ? "," : "", m->phase[i],
                               (double)m->ns[i] / 1e3 / (double)m->calls, (double)m->max[i] / 1e3);
    }
    if (at < len)
        snprintf(out + at, len - at, " (total %.2f)", (double)total / 1e3 / (double)m->calls);
}
