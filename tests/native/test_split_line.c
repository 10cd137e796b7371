/* rm_split_line (monitor/scoring/ascii_text.h) on a line of more than 2^31 fields: the count
 * must neither overflow (UBSan aborts on that) nor index field[] out of bounds. Built and run
 * by tests/unit/test_run_reader_limits.py with -fsanitize=undefined; it needs 4 GiB of memory. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "ascii_text.h"

static const unsigned char kind[256] = {
    [' '] = RM_FIELD_BREAK,
    ['\n'] = RM_LINE_BREAK,
    RM_GIVE_UP_FROM_0X80,
};

int main(void) {
    size_t fields_wanted = ((size_t)1 << 31) + 16; /* past INT_MAX */
    size_t size = 2 * fields_wanted;
    /* Huge pages where the kernel has them: 4 GiB of small pages costs seconds of faults. */
    char *line = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (line == MAP_FAILED) {
        printf("no memory for %zu bytes\n", size);
        return 2;
    }
    (void)madvise(line, size, MADV_HUGEPAGE);
    memset(line, ' ', size); /* then an 'a' every other byte, eight bytes at a time */
    const uint64_t pattern = 0x2061206120612061ULL; /* "a a a a " in little endian */
    for (size_t i = 0; i + 8 <= size; i += 8) {
        memcpy(line + i, &pattern, 8);
    }
    const char *field[6], *line_end;
    size_t field_len[6];
    int fields = rm_split_line(line, line + size, kind, field, field_len, 6, &line_end);
    int ok = fields == 7 && line_end == line + size && field[5] == line + 10 && field_len[5] == 1;
    printf("fields %d, %s\n", fields, ok ? "ok" : "WRONG");
    munmap(line, size);
    return ok ? 0 : 1;
}
