/* allreduce.c: MPI_Init + MPI_Allreduce, to prove a rank wrapped by
 * `gpulaunch exec` is still a working MPI rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    const char *lr = getenv("LOCAL_RANK");
    printf("allreduce rank=%d size=%d sum=%d local_rank=%s cvd=%s pid=%d ppid=%d\n", rank, size, sum,
           lr ? lr : "-", cvd ? cvd : "-", (int)getpid(), (int)getppid());
    MPI_Finalize();
    return 0;
}
