#!/bin/sh
# Recipe: a cron job that must never run twice at once.
#
# koa-buffer-lock runs the job while holding a lock, and exits with the job's
# status; when a previous run still holds the lock it exits 75 at once (or
# after --wait SECONDS), silently, since cron mails whatever a job prints.
# The lock is a flock(2) file in --dir, so it goes with the process: a run
# that crashes leaves nothing to clean up, and the job holds the lock as
# long as it runs, even if koa-buffer-lock itself is killed.
# For jobs on several hosts, use --redis redis://… instead of --dir.
#
# crontab -e:
#   */10 * * * *  cd /srv/myapp && examples/cron-lock.sh >>/var/log/myapp/report.log 2>&1
#
# Environment: LOCK_DIR (default /tmp/koa-buffer-cron-<uid>), JOB_SECONDS
# (how long the stand-in job takes, default 5), WAIT_SECONDS (default 0:
# skip this run when the previous one is still going).
set -u

LOCK_DIR=${LOCK_DIR:-/tmp/koa-buffer-cron-$(id -u)}
JOB_SECONDS=${JOB_SECONDS:-5}
WAIT_SECONDS=${WAIT_SECONDS:-0}
here=$(cd "$(dirname "$0")" && pwd)

# The command as the package installs it; in this repository, its TypeScript
# source run through the repository's tsx (found from here, whatever the cwd).
koa_buffer_lock() {
  if [ -x node_modules/.bin/koa-buffer-lock ]; then
    node_modules/.bin/koa-buffer-lock "$@"
  else
    node --import "$(cd "$here/.." && node -p 'require.resolve("tsx")')" "$here/../src/cli/koa-buffer-lock.ts" "$@"
  fi
}

# koa-buffer-lock never creates the lock directory (a typo would lock alone):
# make it here, private to this user, as it must be.
mkdir -p -m 700 "$LOCK_DIR" || exit 73

# The job runs without a shell unless you ask for one (-c 'COMMAND LINE'
# runs one through sh -c); here a stand-in report.
koa_buffer_lock --dir "$LOCK_DIR" --wait "$WAIT_SECONDS" nightly-report -- \
  sh -c 'echo "report: started (pid $$)"; sleep "$1"; echo "report: done (pid $$)"' report "$JOB_SECONDS"
status=$?

case $status in
  0) ;;
  75)
    # Overlapping runs are expected when a job can outlast its interval: not an error for cron.
    echo "report: skipped, the previous run still holds the lock"
    status=0
    ;;
  *) echo "report: failed with status $status" >&2 ;;
esac
exit $status
