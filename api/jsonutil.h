/*
 * jsonutil.h — identifier syntax shared by the endpoint files.
 */
#ifndef BANDITD_API_JSONUTIL_H
#define BANDITD_API_JSONUTIL_H

/* 1 if s is a valid identifier: [A-Za-z0-9_.-]{1,64}. */
int api_valid_id(const char *s);

#endif
