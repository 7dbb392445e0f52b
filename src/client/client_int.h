/* client_int: helpers shared by the client's files (not part of the public interface).
 * Same error contract as client.h. */
#ifndef CN_CLIENT_INT_H
#define CN_CLIENT_INT_H

#include "client/client.h"

/* Hex signature of r with an already derived key; scratch is reused (its content is lost). */
cn_err cn_sigv4_signature_hex(const cn_sigv4_req *r, const unsigned char key[32], cn_buf *scratch,
                              char out[65]);
/* Appends "host;x-amz-date;..." (sorted lowercase names, duplicates once). */
cn_err cn_sigv4_signed_headers(const cn_sigv4_req *r, cn_buf *b);

#endif
