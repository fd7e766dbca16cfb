// libsystemd (Debian's libsystemd-dev): sd_notify, sd_listen_fds, sd_watchdog_enabled and the
// journal's native protocol (sd_journal_sendv; the variadic sd_journal_send is not callable
// from Swift).
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
