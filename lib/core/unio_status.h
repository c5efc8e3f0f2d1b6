/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UNIO_STATUS_H
#define UNIO_STATUS_H

/**
 * @file
 * The one status type of the Unio API.
 *
 * Contract: a call that completes returns UNIO_OK; a non-blocking call that started an
 * operation returns UNIO_INPROGRESS (or a request handle); every error is negative.
 * Creators return NULL and set an unio_status_t out-parameter; bursts return counts.
 */

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. Negative values are errors. */
typedef enum unio_status {
	UNIO_OK = 0,                        /**< Success. */
	UNIO_INPROGRESS = 1,                /**< Operation started; completes later. */
	/** An argument is NULL, out of range or inconsistent. */
	UNIO_ERR_INVALID_PARAM = -1,
	UNIO_ERR_NO_MEMORY = -2,            /**< Memory allocation failed. */
	/** Temporarily out of a resource (FIFO full, pool empty): retry later. */
	UNIO_ERR_NO_RESOURCE = -3,
	/** The driver or build does not support the operation. */
	UNIO_ERR_UNSUPPORTED = -4,
	UNIO_ERR_UNREACHABLE = -5,          /**< No transport can reach the peer. */
	UNIO_ERR_TIMED_OUT = -6,            /**< The operation or peer did not answer in time. */
	UNIO_ERR_CANCELED = -7,             /**< The request was canceled. */
	UNIO_ERR_MESSAGE_TRUNCATED = -8,    /**< The receive buffer is smaller than the message. */
	UNIO_ERR_CONNECTION_RESET = -9,     /**< The peer closed or died. */
	UNIO_ERR_IO = -10,                  /**< A system call failed. */
	/** The object is in use or an event is already pending. */
	UNIO_ERR_BUSY = -11,
	UNIO_ERR_NO_DEVICE = -12,           /**< No device is present for the driver. */
	UNIO_ERR_VERSION_MISMATCH = -13,    /**< The peer speaks another wire-protocol version. */
	UNIO_ERR_REJECTED = -14,            /**< The peer rejected the connection or message. */
	/** The operation is not permitted (e.g. CMA to another user). */
	UNIO_ERR_PERMISSION = -15,
	UNIO_ERR_NOT_FOUND = -16,           /**< No such element (handler, variable, device). */
	UNIO_ERR_OUT_OF_RANGE = -17,        /**< Address or length outside the registered range. */
	UNIO_ERR_INVALID_ADDR = -18,        /**< A malformed or foreign address or remote key. */
	UNIO_ERR_NOT_CONNECTED = -19,       /**< The endpoint is closed or not yet connected. */
	UNIO_ERR_CONFIG = -20,              /**< A configuration value is malformed. */
	UNIO_ERR_EXISTS = -21,              /**< The element already exists. */
	UNIO_ERR_PROTO = -22,               /**< The peer sent a malformed message. */
	UNIO_ERR_LAST = -23                 /**< One past the last error (not a status). */
} unio_status_t;

/**
 * The name-and-meaning string of a status, never NULL.
 *
 * @param status any value; unknown values give "unknown status".
 */
const char *unio_status_string(unio_status_t status);

/** True when @p s is an error (negative). */
#define UNIO_IS_ERR(s) ((s) < 0)

#ifdef __cplusplus
}
#endif

#endif /* UNIO_STATUS_H */
