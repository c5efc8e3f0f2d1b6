/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>

#include "unio_status.h"

static const char *const status_strings[] = {
	[UNIO_OK] = "success",
	[UNIO_INPROGRESS] = "operation in progress",
	[-UNIO_ERR_INVALID_PARAM + 1] = "invalid parameter",
	[-UNIO_ERR_NO_MEMORY + 1] = "out of memory",
	[-UNIO_ERR_NO_RESOURCE + 1] = "no resource available, retry later",
	[-UNIO_ERR_UNSUPPORTED + 1] = "operation not supported",
	[-UNIO_ERR_UNREACHABLE + 1] = "destination is unreachable",
	[-UNIO_ERR_TIMED_OUT + 1] = "timed out",
	[-UNIO_ERR_CANCELED + 1] = "request canceled",
	[-UNIO_ERR_MESSAGE_TRUNCATED + 1] = "message truncated",
	[-UNIO_ERR_CONNECTION_RESET + 1] = "connection reset by peer",
	[-UNIO_ERR_IO + 1] = "input/output error",
	[-UNIO_ERR_BUSY + 1] = "busy",
	[-UNIO_ERR_NO_DEVICE + 1] = "no such device",
	[-UNIO_ERR_VERSION_MISMATCH + 1] = "peer speaks another wire-protocol version",
	[-UNIO_ERR_REJECTED + 1] = "rejected by peer",
	[-UNIO_ERR_PERMISSION + 1] = "operation not permitted",
	[-UNIO_ERR_NOT_FOUND + 1] = "not found",
	[-UNIO_ERR_OUT_OF_RANGE + 1] = "out of range",
	[-UNIO_ERR_INVALID_ADDR + 1] = "invalid address or remote key",
	[-UNIO_ERR_NOT_CONNECTED + 1] = "endpoint is not connected",
	[-UNIO_ERR_CONFIG + 1] = "invalid configuration value",
	[-UNIO_ERR_EXISTS + 1] = "already exists",
	[-UNIO_ERR_PROTO + 1] = "malformed message from peer",
};

const char *
unio_status_string(unio_status_t status)
{
	int idx = status >= 0 ? (int)status : -(int)status + 1;

	if (status > UNIO_INPROGRESS || status <= UNIO_ERR_LAST ||
	    idx >= (int)(sizeof(status_strings) / sizeof(status_strings[0])) ||
	    status_strings[idx] == NULL)
		return "unknown status";
	return status_strings[idx];
}
