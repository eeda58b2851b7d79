/*
 * floor-launcher: the least a task launcher can do, for `make bench`.
 * It keeps P children running, each slot a thread that spawns a child
 * with posix_spawn and waits for it, and does nothing else: no output
 * handling, no record. Its rate is the ceiling of any launcher on the
 * machine, so the bench can tell a launcher's own cost from what the
 * tasks themselves cost.
 *
 * With "bound", slot k's thread is pinned to CPU k (mod the CPUs it may
 * use) before it spawns, so its children are too: the ceiling of a
 * launcher that binds its slots, as gpulaunch does.
 *
 * usage: floor-launcher N P COMMAND [bound]
 *        runs COMMAND 1 … COMMAND N, P at a time
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

static int n, bound;
static char *command;
static atomic_int next;
static cpu_set_t allowed;

static void *slot(void *arg) {
  long k = (long)arg;
  if (bound) {
    int cpus = CPU_COUNT(&allowed), cpu = -1;
    for (int c = 0, seen = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &allowed) && seen++ == k % cpus) {
        cpu = c;
        break;
      }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  }
  char seq[32];
  for (;;) {
    int t = atomic_fetch_add(&next, 1) + 1;
    if (t > n)
      return NULL;
    snprintf(seq, sizeof seq, "%d", t);
    char *args[] = {command, seq, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, command, NULL, NULL, args, environ) != 0) {
      perror("posix_spawnp");
      exit(1);
    }
    int status;
    waitpid(pid, &status, 0);
  }
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "bound") != 0)) {
    fprintf(stderr, "usage: floor-launcher N P COMMAND [bound]\n");
    return 2;
  }
  n = atoi(argv[1]);
  int p = atoi(argv[2]);
  command = argv[3];
  bound = argc == 5;
  sched_getaffinity(0, sizeof allowed, &allowed);
  pthread_t threads[p];
  for (long k = 0; k < p; k++)
    pthread_create(&threads[k], NULL, slot, (void *)k);
  for (int k = 0; k < p; k++)
    pthread_join(threads[k], NULL);
  return 0;
}
