/*
 * version.h — the version of banditd, defined once. It is the latest
 * release of CHANGELOG.md ("## [X.Y.Z]"); tests/unit/test_config.c fails
 * when the two disagree, so a release bumps both in one commit.
 */
#ifndef BANDITD_BASE_VERSION_H
#define BANDITD_BASE_VERSION_H

#define BANDITD_VERSION "0.5.0"

#endif
