#include "sandbox/message_channel.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sandbox_test_util.h"

namespace kforge {
namespace {

std::string Header(uint32_t length) {
  return {static_cast<char>(length >> 24), static_cast<char>(length >> 16), static_cast<char>(length >> 8),
          static_cast<char>(length)};
}

std::string Frame(const std::string& body) { return Header(static_cast<uint32_t>(body.size())) + body; }

void WriteAll(int fd, const std::string& bytes) {
  size_t offset = 0;
  while (offset < bytes.size()) {
    ssize_t written = write(fd, bytes.data() + offset, bytes.size() - offset);
    ASSERT_GT(written, 0);
    offset += static_cast<size_t>(written);
  }
}

// One pipe: `writer_` is what a sender holds, `reader_` what a receiver holds.
class MessageChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    reader_ = fds[0];
    writer_ = fds[1];
  }
  void TearDown() override {
    CloseWriter();
    CloseReader();
  }
  void CloseWriter() {
    if (writer_ >= 0) close(writer_);
    writer_ = -1;
  }
  void CloseReader() {
    if (reader_ >= 0) close(reader_);
    reader_ = -1;
  }
  MessageChannel Sender() const { return MessageChannel(writer_, -1); }
  MessageChannel Receiver() const { return MessageChannel(-1, reader_); }

  int reader_ = -1;
  int writer_ = -1;
};

class MessageChannelRoundTripTest : public MessageChannelTest, public ::testing::WithParamInterface<Json> {};

TEST_P(MessageChannelRoundTripTest, ReceivesWhatWasSent) {
  ASSERT_TRUE(Sender().Send(GetParam()).ok());
  auto received = Receiver().Receive(2);
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_EQ(*received, GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Messages, MessageChannelRoundTripTest,
    ::testing::Values(Json::object(), Json{{"id", 1}, {"op", "hello"}},
                      Json{{"text", "h\xC3\xA9llo w\xC3\xB6rld \xF0\x9F\x9A\x80 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"}},
                      Json{{"quotes", "a \"b\" \\c\n\td"}, {"nul", std::string("x\0y", 3)}},
                      Json{{"nested", {{"list", {1, 2.5, -3, nullptr, true, "s"}}, {"big", 9007199254740993LL}}}},
                      Json::array({1, 2, 3})));

TEST_F(MessageChannelTest, LargeMessageRoundTrips) {
  std::string payload(10 << 20, 'x');
  for (size_t i = 0; i < payload.size(); i += 97) payload[i] = static_cast<char>('a' + i % 26);
  Json message = {{"id", 7}, {"payload", payload}};
  Status sent;
  std::thread sender([&] { sent = Sender().Send(message); });  // more than a pipe holds
  auto received = Receiver().Receive(20);
  sender.join();
  ASSERT_TRUE(sent.ok()) << sent.ToString();
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_EQ((*received)["id"], 7);
  EXPECT_TRUE((*received)["payload"] == payload);
}

TEST_F(MessageChannelTest, InvalidUtf8IsReplacedNotRejected) {
  ASSERT_TRUE(Sender().Send(Json{{"s", "a\xff" "b"}}).ok());
  auto received = Receiver().Receive(2);
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_EQ((*received)["s"], "a\xEF\xBF\xBD" "b");
}

TEST_F(MessageChannelTest, ConsecutiveFramesAreReadOneAtATime) {
  WriteAll(writer_, Frame(R"({"n":1})") + Frame(R"({"n":2})"));
  MessageChannel receiver = Receiver();
  EXPECT_EQ((*receiver.Receive(2))["n"], 1);
  EXPECT_EQ((*receiver.Receive(2))["n"], 2);
}

TEST_F(MessageChannelTest, TimeoutWhenNothingArrives) {
  auto start = std::chrono::steady_clock::now();
  auto received = Receiver().Receive(0.2);
  double took = SecondsSince(start);
  EXPECT_EQ(received.status().code(), StatusCode::kTimeout);
  EXPECT_GE(took, 0.19);
  EXPECT_LT(took, 1.0);
}

TEST_F(MessageChannelTest, TimeoutWhenOnlyPartOfAFrameArrives) {
  WriteAll(writer_, Header(100) + "{\"partial\":");
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Receiver().Receive(0.2).status().code(), StatusCode::kTimeout);
  EXPECT_LT(SecondsSince(start), 1.0);
}

TEST_F(MessageChannelTest, UnavailableWhenTheWriterCloses) {
  CloseWriter();
  EXPECT_EQ(Receiver().Receive(2).status().code(), StatusCode::kUnavailable);
}

TEST_F(MessageChannelTest, UnavailableWhenTheWriterClosesMidFrame) {
  WriteAll(writer_, Header(100) + "{\"cut\":");
  CloseWriter();
  EXPECT_EQ(Receiver().Receive(2).status().code(), StatusCode::kUnavailable);
}

TEST_F(MessageChannelTest, OversizedFrameHeaderIsInvalidArgument) {
  for (uint32_t length : {static_cast<uint32_t>(kMaxMessageBytes + 1), 0xFFFFFFFFu}) {
    WriteAll(writer_, Header(length));
    auto received = Receiver().Receive(2);
    EXPECT_EQ(received.status().code(), StatusCode::kInvalidArgument) << length;
    EXPECT_NE(received.status().message().find(std::to_string(length)), std::string::npos);
  }
}

class MalformedBodyTest : public MessageChannelTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(MalformedBodyTest, IsInvalidArgument) {
  WriteAll(writer_, Frame(GetParam()));
  EXPECT_EQ(Receiver().Receive(2).status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Bodies, MalformedBodyTest,
                         ::testing::Values("", "not json", "{\"a\":", "{\"a\":1}}", "\xff\xfe"));

TEST_F(MessageChannelTest, FrameSplitAcrossDelayedWritesIsReassembled) {
  std::string frame = Frame(R"({"id":3,"text":"reassembled"})");
  std::vector<std::string> pieces = {frame.substr(0, 1), frame.substr(1, 2), frame.substr(3, 1),
                                     frame.substr(4, 5), frame.substr(9, 7), frame.substr(16)};
  std::thread writer([&] {
    for (const auto& piece : pieces) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      WriteAll(writer_, piece);
    }
  });
  auto received = Receiver().Receive(2);
  writer.join();
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_EQ(*received, (Json{{"id", 3}, {"text", "reassembled"}}));
}

TEST_F(MessageChannelTest, TimeoutCoversTheWholeFrameNotEachRead) {
  // One byte every 40 ms: every read makes progress, but the whole frame takes 0.7 s.
  std::string frame = Frame(R"({"slow":true})");
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (char byte : frame) {
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      if (stop || write(writer_, &byte, 1) != 1) return;
    }
  });
  auto start = std::chrono::steady_clock::now();
  auto received = Receiver().Receive(0.2);
  double took = SecondsSince(start);
  stop = true;
  writer.join();
  EXPECT_EQ(received.status().code(), StatusCode::kTimeout);
  EXPECT_LT(took, 0.6);
}

TEST_F(MessageChannelTest, SendRefusesMessagesOverTheLimit) {
  Json message = {{"payload", std::string(kMaxMessageBytes, 'x')}};
  EXPECT_EQ(Sender().Send(message).code(), StatusCode::kInvalidArgument);
}

TEST_F(MessageChannelTest, SendToAClosedReaderIsUnavailableWhenSigpipeIsIgnored) {
  ScopedIgnoreSigpipe ignore_sigpipe;
  CloseReader();
  EXPECT_EQ(Sender().Send(Json{{"id", 1}}).code(), StatusCode::kUnavailable);
}

// Regression: nothing in kforge ignores SIGPIPE, so Send() to a worker that has died (its read end
// closed) kills kforge itself with SIGPIPE instead of returning Unavailable. Runs in a death-test
// child so that the failure cannot take the test binary down.
TEST_F(MessageChannelTest, SendToAClosedReaderDoesNotRaiseSigpipe) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        signal(SIGPIPE, SIG_DFL);
        CloseReader();
        Status sent = Sender().Send(Json{{"id", 1}});
        _exit(sent.code() == StatusCode::kUnavailable ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kforge
