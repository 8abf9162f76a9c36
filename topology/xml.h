/*
 * xml.h — a small strict XML reader for topology files: elements and attributes with their
 * line, comments and the <?xml?> prolog; no DTD (a <!DOCTYPE is refused, so no entity can
 * expand), no namespaces. Errors are "name:line: what is wrong"; nothing it reads can crash it.
 */
#ifndef SC_TP_XML_H
#define SC_TP_XML_H

#include <stddef.h>

#define SC_XML_MAX_ATTRS 32
#define SC_XML_MAX_DEPTH 64

typedef struct sc_xml_attr { const char *name, *value; } sc_xml_attr;
typedef struct sc_xml_cb {
  void *ctx;
  /* An element opens (its attributes decoded, NUL-terminated, valid during the call) at line:
   * 0 to go on, else stop (the callback has written its message into err). */
  int (*open)(void *ctx, const char *name, const sc_xml_attr *attrs, int nattrs, int line, char *err, size_t cap);
  int (*close)(void *ctx, const char *name, int line, char *err, size_t cap);
} sc_xml_cb;

/* Parse text[0, len) (any bytes; a NUL inside is an error). 0, or -1 with err filled. */
int sc_xml_parse(const char *name, const char *text, size_t len, const sc_xml_cb *cb, char *err, size_t cap);
/* The root element's name into out[cap] as sc_xml_parse reads it ("" when the text has none, or
 * is malformed before it): to tell NCCL's from hwloc's by the first element, whatever the
 * comments before it mention. */
void sc_xml_root(const char *text, size_t len, char *out, size_t cap);

#endif
