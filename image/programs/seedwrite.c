/*
 * seedwrite: the seed's own benchmark, as its report describes it — "a small
 * piece of C code that opens as many files as you throw as an argument and
 * then writes to those files" — round-robin, one block to each file in turn,
 * until every file has its size. An example of a program a user brings to a
 * `command` workload: `cargo xtask program seedwrite` builds it static with
 * musl (it then runs on Linux 2.6 and 6.x alike).
 *
 * usage: seedwrite FILES SIZE_KIB [BLOCK_KIB]   (in the current directory)
 * Prints one line of figures on stdout; exits 1 with the reason on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static long number(const char *arg, const char *what)
{
	char *end;
	long n = strtol(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || n <= 0) {
		fprintf(stderr, "seedwrite: %s must be a positive number, not '%s'\n", what, arg);
		exit(1);
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: seedwrite FILES SIZE_KIB [BLOCK_KIB]\n");
		return 1;
	}
	long files = number(argv[1], "FILES");
	long size = number(argv[2], "SIZE_KIB") * 1024;
	long block = (argc == 4 ? number(argv[3], "BLOCK_KIB") : 16) * 1024;
	if (block > size)
		block = size;
	int *fds = calloc(files, sizeof *fds);
	char *buf = malloc(block);
	if (!fds || !buf) {
		fprintf(stderr, "seedwrite: out of memory for %ld files\n", files);
		return 1;
	}
	memset(buf, 'x', block);
	double start = now();
	for (long i = 0; i < files; i++) {
		char name[32];
		snprintf(name, sizeof name, "f%06ld", i);
		fds[i] = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fds[i] < 0) {
			fprintf(stderr, "seedwrite: open %s: %s\n", name, strerror(errno));
			return 1;
		}
	}
	for (long done = 0; done < size; done += block) {
		long n = size - done < block ? size - done : block;
		for (long i = 0; i < files; i++) {
			if (write(fds[i], buf, n) != n) {
				fprintf(stderr, "seedwrite: write f%06ld at %ld: %s\n", i, done, strerror(errno));
				return 1;
			}
		}
	}
	for (long i = 0; i < files; i++)
		close(fds[i]);
	double s = now() - start;
	printf("seedwrite: %ld files x %ld KiB in %.3f s (%.1f MiB/s)\n", files, size / 1024, s,
	       files * (double)size / (1 << 20) / (s > 0 ? s : 1e-9));
	return 0;
}
