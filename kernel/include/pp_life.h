/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pp_life.h: a connection entry's lifetime word (its protocol is in pp_conn_life.h), apart so
 * that the entry's layout (pp_conn_state.h) can embed it without pulling in the protocol, whose
 * includer must supply the map accessors first.
 */
#ifndef PP_LIFE_H
#define PP_LIFE_H

struct pp_life {
	__u64 word;      /* generation << 32 | references; free while references == 0 */
	__u64 owner;     /* mptcp_sock pointer of the connection; meaningful only while referenced */
};

#endif /* PP_LIFE_H */
