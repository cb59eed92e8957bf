/* Random RAM access latency by pointer chasing: each load's address comes from the previous
 * load, so the CPU cannot overlap them, and the array is far larger than the caches, so almost
 * every load goes to DRAM. One node per 64-byte cache line, linked in one random cycle
 * (Sattolo's shuffle) so the prefetchers cannot guess the next line.
 *
 * usage: chase MIB STEPS RUNS SEED   → one line per run: nanoseconds per dependent load,
 * timed on the thread's CPU clock
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct node { struct node *next; char pad[64 - sizeof(struct node *)]; } node;

static uint64_t state;
static uint64_t next_random(void) { /* xorshift64*: fast, seeded, good enough for a shuffle */
    state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
    return state * 2685821657736338717ULL;
}

/* The thread's own CPU clock: on a busy, shared machine the time this process spends waiting
 * for a core is not a memory access, and a wall clock would count it. */
static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: chase MIB STEPS RUNS SEED\n"); return 2; }
    size_t n = strtoull(argv[1], NULL, 10) * 1024 * 1024 / sizeof(node);
    size_t steps = strtoull(argv[2], NULL, 10);
    int runs = atoi(argv[3]);
    state = strtoull(argv[4], NULL, 10) | 1;
    node *a = aligned_alloc(64, n * sizeof(node));
    size_t *order = malloc(n * sizeof(size_t));
    if (!a || !order || n < 2) { fprintf(stderr, "chase: cannot allocate\n"); return 1; }
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 0; i--) { /* Sattolo: one cycle through every node */
        size_t j = next_random() % i, t = order[i];
        order[i] = order[j]; order[j] = t;
    }
    for (size_t i = 0; i < n; i++) a[order[i]].next = &a[order[(i + 1) % n]];
    node *p = &a[order[0]];
    free(order);
    for (size_t s = 0; s < n; s++) p = p->next; /* one lap: pages mapped, TLB and caches warm */
    for (int r = 0; r < runs; r++) {
        double start = now_ns();
        for (size_t s = 0; s < steps; s++) p = p->next;
        double took = now_ns() - start;
        printf("%.3f\n", took / (double)steps);
    }
    if (p == NULL) puts("unreachable"); /* keeps the chase from being optimised away */
    free(a);
    return 0;
}
