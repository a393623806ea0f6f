// Terminal text for the live view: lines made safe to print, and their width in display columns
// (UTF-8, East Asian wide characters as two, combining marks as none), so a frame's lines never
// wrap: a wrapped line would break the cursor-up arithmetic that redraws the frame in place.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace oe::view {

// `text` as one terminal-safe line: its first line, control characters (C0, DEL, C1) as spaces,
// invalid UTF-8 as '?', cut to at most `max` bytes on a character boundary with "..." when
// longer. A plugin's activity or error text can hold anything, and an escape sequence in it
// would corrupt the frame.
[[nodiscard]] std::string safeLine(std::string_view text, size_t max = 240);

// Columns a terminal gives one code point: 0 (combining marks, zero-width), 1 or 2 (wide).
[[nodiscard]] int codePointWidth(char32_t cp);

// Display columns of a UTF-8 string (as safeLine leaves it: no control characters).
[[nodiscard]] size_t displayWidth(std::string_view text);

// `text` cut so that it takes at most `columns` display columns, never inside a character; a
// cut line ends in "..." when there is room for it.
[[nodiscard]] std::string fitWidth(std::string_view text, size_t columns);

// `text` fitted to `columns` and padded with spaces to exactly that width (a table cell).
[[nodiscard]] std::string padWidth(std::string_view text, size_t columns);

}  // namespace oe::view
