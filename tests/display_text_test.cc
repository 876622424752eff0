// DisplayText: every byte or character of client text that could rewrite, recolour or reorder a
// terminal is spelled out; well-formed UTF-8 passes; a cut never splits a character or escape.
#include "hourglass/display_text.h"

#include <gtest/gtest.h>

#include <random>

namespace hourglass {
namespace {

TEST(DisplayText, ControlsAndEscapesAreSpelledOut) {
  EXPECT_EQ(DisplayText("line\r\nInjected: 1 \x1b[31mred"), "line\\r\\nInjected: 1 \\x1b[31mred");
  EXPECT_EQ(DisplayText(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(DisplayText("tab\there\x7f"), "tab\\there\\x7f");
  EXPECT_EQ(DisplayText("back\\slash"), "back\\\\slash") << "an escape shown is never ambiguous";
}

TEST(DisplayText, InvisibleCharactersThatReorderOrHideAreSpelledOut) {
  EXPECT_EQ(DisplayText("ann\u202egpj.exe"), "ann\\u{202e}gpj.exe");
  EXPECT_EQ(DisplayText("\u2066x\u2069\u200b\ufeff"), "\\u{2066}x\\u{2069}\\u{200b}\\u{feff}");
  EXPECT_EQ(DisplayText("c1\u0085"), "c1\\u{0085}") << "C1 controls too (NEL)";
  EXPECT_EQ(DisplayText("\u2028"), "\\u{2028}") << "a line separator";
}

TEST(DisplayText, WellFormedUtf8PassesAndMalformedBytesAreSpelledOut) {
  EXPECT_EQ(DisplayText("zoë@exämple.org 東京 😀"), "zoë@exämple.org 東京 😀");
  EXPECT_EQ(DisplayText("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(DisplayText("\xc0\xaf"), "\\xc0\\xaf") << "an overlong '/'";
  EXPECT_EQ(DisplayText("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "a surrogate";
  EXPECT_EQ(DisplayText("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80") << "past U+10FFFF";
  EXPECT_EQ(DisplayText("e\xc3"), "e\\xc3") << "cut short at the end";
  EXPECT_EQ(DisplayText("\xc3\x1b"), "\\xc3\\x1b");
}

TEST(DisplayText, ACutEndsWithDotsAndNeverSplitsACharacterOrAnEscape) {
  EXPECT_EQ(DisplayText("abcdef", 6), "abcdef") << "what fits is not cut";
  EXPECT_EQ(DisplayText("abcdefg", 6), "abc...");
  EXPECT_EQ(DisplayText("ab\x1b"
                        "cdef",
                        6),
            "ab...")
      << "not half of \\x1b";
  EXPECT_EQ(DisplayText("aé\x1b", 7), "aé\\x1b");
  EXPECT_EQ(DisplayText("aé\x1bz", 7), "aé...");
  EXPECT_EQ(DisplayText("éééé", 5), "é...");
  EXPECT_EQ(DisplayText("éééé", 4), "...");
}

// Random bytes: the output is valid UTF-8 with no byte below 0x20 and no DEL, whatever came in.
TEST(DisplayText, AnyBytesGiveOneLineOfPrintableText) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string in(rng() % 24, '\0');
    for (char& c : in) c = static_cast<char>(rng() % 256);
    for (const std::string& out : {DisplayText(in), DisplayText(in, 16)}) {
      for (char c : out) {
        const auto b = static_cast<unsigned char>(c);
        ASSERT_TRUE(b >= 0x20 && b != 0x7f) << "from " << DisplayText(in);
      }
      ASSERT_EQ(
          DisplayText(out),
          [&] {
            std::string doubled;  // well-formed, printable text changes only by its backslashes
            for (char c : out) doubled += c == '\\' ? std::string("\\\\") : std::string(1, c);
            return doubled;
          }())
          << "from " << DisplayText(in);
    }
    ASSERT_LE(DisplayText(in, 16).size(), 16u);
  }
}

}  // namespace
}  // namespace hourglass
