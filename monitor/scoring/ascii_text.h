/* ASCII text helpers the C readers of run and qrels files share: splitting a line into its
 * fields, and a Python str from bytes already checked to be ASCII. */
#ifndef RANKMON_ASCII_TEXT_H
#define RANKMON_ASCII_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A Python str from bytes the caller has checked are ASCII (all below 0x80), made without
   decoding. */
static inline PyObject *rm_ascii_text(const char *text, size_t len) {
    PyObject *string = PyUnicode_New((Py_ssize_t)len, 127);
    if (string != NULL) {
        memcpy(PyUnicode_DATA(string), text, len);
    }
    return string;
}

/* What a byte is to a reader's rm_split_line (each reader has its own table). Every byte
   that is not RM_TEXT must be below 0x21 or outside ASCII. */
enum { RM_TEXT = 0, RM_FIELD_BREAK = 1, RM_GIVE_UP = 2, RM_LINE_BREAK = 3 };

/* The last 128 entries of a reader's class table: every byte from 0x80 is RM_GIVE_UP (2). */
#define RM_GIVE_UP_FROM_0X80                                                                      \
    [0x80] = RM_GIVE_UP, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, \
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, \
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, \
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, \
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2

/* Bit i set when p[i] (i < n <= 64) is below 0x21 or outside ASCII: the bytes that may be a
   break. 16 bytes a step with SSE2, where a signed compare finds both kinds at once. */
static inline uint64_t rm_specials(const char *p, size_t n) {
    uint64_t bits = 0;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i limit = _mm_set1_epi8(0x21);
    for (; i + 16 <= n; i += 16) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        uint64_t found = (uint16_t)_mm_movemask_epi8(_mm_cmplt_epi8(bytes, limit));
        bits |= found << i;
    }
#endif
    for (; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        bits |= (uint64_t)(c < 0x21 || c >= 0x80) << i;
    }
    return bits;
}

static inline int rm_lowest_bit(uint64_t bits) {
#if defined(__GNUC__)
    return __builtin_ctzll(bits);
#else
    int i = 0;
    while (!(bits & 1)) {
        bits >>= 1;
        i++;
    }
    return i;
#endif
}

/* The fields of the line at p, which ends at its first RM_LINE_BREAK byte or at `end`: how
   many there are, counted up to `most + 1` (the first `most` stored in field/field_len; a
   line of billions of fields cannot overflow the count), or -1 at an RM_GIVE_UP byte.
   *line_end: the line break, or `end`, or the RM_GIVE_UP byte. Fields are the runs of bytes
   between RM_FIELD_BREAK bytes; RM_TEXT bytes below 0x21 belong to their field. */
static inline int rm_split_line(const char *p, const char *end, const unsigned char kind[256],
                                const char **field, size_t *field_len, int most,
                                const char **line_end) {
    int fields = 0;
    const char *start = p; /* where the field being read began */
    for (const char *base = p; base < end; base += 64) {
        size_t span = (size_t)(end - base) < 64 ? (size_t)(end - base) : 64;
        uint64_t specials = rm_specials(base, span);
        while (specials) {
            const char *at = base + rm_lowest_bit(specials);
            specials &= specials - 1;
            unsigned char k = kind[(unsigned char)*at];
            if (k == RM_TEXT) {
                continue;
            }
            if (k == RM_GIVE_UP) {
                *line_end = at;
                return -1;
            }
            if (at > start) {
                if (fields < most) {
                    field[fields] = start;
                    field_len[fields] = (size_t)(at - start);
                }
                if (fields <= most) {
                    fields++;
                }
            }
            start = at + 1;
            if (k == RM_LINE_BREAK) {
                *line_end = at;
                return fields;
            }
        }
    }
    if (end > start) {
        if (fields < most) {
            field[fields] = start;
            field_len[fields] = (size_t)(end - start);
        }
        if (fields <= most) {
            fields++;
        }
    }
    *line_end = end;
    return fields;
}

#endif
