/*
 * viz.c — `schedc viz`: an SVG of a plan, one horizontal lane per rank and one column per step;
 * every transfer is an arrow from its source lane to its destination lane across the step,
 * coloured by chunk (hue), solid for reduce and dashed for copy, with a hover title.
 */
#include <math.h>
#include <stdio.h>

#include "cli.h"

int cli_viz_svg(const schedc_plan *plan, FILE *f) {
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  if (schedc_plan_get_info(plan, &in) != SCHEDC_OK) return -1;
  const double left = 70, top = 50, colw = in.nsteps > 200 ? 24 : 70, rowh = in.nranks > 64 ? 8 : 32;
  double w = left + colw * (in.nsteps > 0 ? in.nsteps : 1) + 40, h = top + rowh * in.nranks + 60;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "font-family=\"sans-serif\" font-size=\"11\">\n", w, h);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<defs><marker id=\"a\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"5\" "
             "markerHeight=\"5\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"context-stroke\"/></marker></defs>\n");
  fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">%s: %s, %d ranks, %d chunks, %d steps "
             "(solid: reduce, dashed: copy; colour: chunk)</text>\n",
          left, in.name, schedc_collective_name(in.collective), in.nranks, in.nchunks, in.nsteps);
  for (int r = 0; r < in.nranks; r++) {
    double y = top + rowh * (r + 0.5);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, w - 40, y);
    if (rowh >= 8 && (in.nranks <= 64 || r % 8 == 0))
      fprintf(f, "<text x=\"8\" y=\"%.1f\" dy=\"4\">rank %d</text>\n", y, r);
  }
  for (int s = 0; s < in.nsteps; s++)
    if (in.nsteps <= 200 || s % 10 == 0)
      fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n", left + colw * (s + 0.5),
              top - 6, s);
  for (long i = 0; i < in.ntransfers; i++) {
    schedc_transfer t;
    if (schedc_plan_transfer(plan, i, &t) != SCHEDC_OK) return -1;
    double hue = fmod(t.chunk * 360.0 / (in.nchunks > 0 ? in.nchunks : 1) * 0.97, 360.0);
    double x1 = left + colw * t.step + 4, x2 = left + colw * (t.step + 1) - 4;
    double y1 = top + rowh * (t.src + 0.5), y2 = top + rowh * (t.dst + 0.5);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"hsl(%.0f,75%%,42%%)\" "
               "stroke-width=\"1.5\"%s marker-end=\"url(#a)\"><title>step %d: %s r%d -&gt; r%d chunk %d "
               "(%s:%d)</title></line>\n",
            x1, y1, x2, y2, hue, t.kind == SCHEDC_XFER_COPY ? " stroke-dasharray=\"4 2\"" : "", t.step,
            t.kind == SCHEDC_XFER_COPY ? "copy" : "reduce", t.src, t.dst, t.chunk, t.file, t.line);
  }
  /* Chunk legend. */
  int shown = in.nchunks < 32 ? in.nchunks : 32;
  for (int c = 0; c < shown; c++) {
    double hue = fmod(c * 360.0 / in.nchunks * 0.97, 360.0);
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"hsl(%.0f,75%%,42%%)\"/>"
               "<text x=\"%.0f\" y=\"%.0f\">c%d</text>\n",
            left + c * 40.0, h - 30, hue, left + c * 40.0 + 13, h - 21, c);
  }
  fprintf(f, "</svg>\n");
  return ferror(f) ? -1 : 0;
}
