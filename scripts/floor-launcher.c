/*
 * floor-launcher: the least a task launcher can do, for `make bench`.
 * It keeps P children running with posix_spawn and wait, and does nothing
 * else: no output handling, no binding, no record. Its rate is the ceiling
 * of any launcher on the machine, so the bench can tell a launcher's own
 * cost from what the tasks themselves cost.
 *
 * usage: floor-launcher N P COMMAND   runs COMMAND 1 … COMMAND N, P at a time
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: floor-launcher N P COMMAND\n");
    return 2;
  }
  int n = atoi(argv[1]), p = atoi(argv[2]), started = 0, running = 0;
  char seq[32];
  while (started < n || running > 0) {
    while (running < p && started < n) {
      pid_t pid;
      snprintf(seq, sizeof seq, "%d", started + 1);
      char *args[] = {argv[3], seq, NULL};
      if (posix_spawnp(&pid, argv[3], NULL, NULL, args, environ) != 0) {
        perror("posix_spawnp");
        return 1;
      }
      started++, running++;
    }
    int status;
    if (wait(&status) > 0)
      running--;
  }
  return 0;
}
