#ifndef MQ_CAPTION_RENDER_H
#define MQ_CAPTION_RENDER_H

#include "video/video_render.h"

/// Captions drawn with libass (as mpv draws subtitles): the caption screen as FFmpeg's caption
/// decoder writes it — ASS events ("ReadOrder,Layer,Style,Name,MarginL,MarginR,MarginV,Effect,
/// Text", its rows placed with {\an7}{\pos(x,y)} on a 384×288 script, CEA-608's 32 columns × 15
/// rows) — rendered over the picture's area of an XRGB8888 canvas. The script's style is the
/// decoder's own (white on an opaque black box, 16 of 288 lines high, as 608 decoders show it),
/// in DejaVu Sans Mono read from its file: no font lookup, so every box draws the same pixels.
/// Video thread only.

/// The font file drawn with (Debian's fonts-dejavu-core).
#define MQ_CAPTION_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
/// Bytes of a caption screen's events kept (MQ_CC_ASS: 4 rows of 32 with their tags fit).
#define MQ_CAPTION_EVENTS 1024

typedef struct mq_caption_render mq_caption_render;

/// `font`: a TrueType/OpenType file (NULL: MQ_CAPTION_FONT). MQ_ERR_NOT_FOUND without the file,
/// MQ_ERR_NO_MEMORY when libass cannot start.
int mq_caption_render_create(const char *font, mq_caption_render **out);
void mq_caption_render_destroy(mq_caption_render **r);

/// The screen is now `events` (one event a line; "" an empty screen). Malformed lines are
/// libass's to skip: what it parses is shown.
void mq_caption_render_set(mq_caption_render *r, const char *events);

/// Draws the screen over `area` of `c` (where the picture is: the script's 384×288 is fitted
/// into it, 4:3 inside a wider picture as 608 has it). Returns the number of pixels inked.
long mq_caption_render_draw(mq_caption_render *r, const mq_canvas *c, mq_rect area);

#endif
