# Run the command given as arguments with /dev/shm (another mount) as its
# working directory: -c splits at spaces only, as bpftrace does, so the
# shell code lives here.
cd /dev/shm && exec "$@"
