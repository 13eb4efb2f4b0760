#include "compiler/ir/import_graph.h"

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/visitor.h"
#include "core/files.h"

namespace kforge::ir {
namespace {

// A small valid capture: linear (permute + addmm) then relu.
Json ValidDocument() {
  return Json::parse(R"({
    "format": "kforge-graph-1", "task": "t",
    "inputs": [{"name": "x", "index": 0, "shape": [8, 64], "dtype": "float32", "stride": [64, 1]}],
    "parameters": [{"name": "w", "target": "linear.weight", "kind": "parameter", "shape": [32, 64],
                    "dtype": "float32", "stride": [64, 1]},
                   {"name": "b", "target": "linear.bias", "kind": "parameter", "shape": [32], "dtype": "float32",
                    "stride": [1]}],
    "constants": [{"name": "c", "target": "lifted_tensor_0", "kind": "constant", "shape": [], "dtype": "float32",
                   "stride": [], "value": 0.5}],
    "nodes": [
      {"name": "permute", "op": "aten.permute.default", "args": [{"node": "w"}, {"list": [{"int": 1}, {"int": 0}]}],
       "kwargs": {}, "outputs": [{"shape": [64, 32], "dtype": "float32", "stride": [1, 64]}]},
      {"name": "addmm", "op": "aten.addmm.default", "args": [{"node": "b"}, {"node": "x"}, {"node": "permute"}],
       "kwargs": {}, "outputs": [{"shape": [8, 32], "dtype": "float32", "stride": [32, 1]}]},
      {"name": "relu", "op": "aten.relu.default", "args": [{"node": "addmm"}], "kwargs": {},
       "outputs": [{"shape": [8, 32], "dtype": "float32", "stride": [32, 1]}]}
    ],
    "outputs": [{"node": "relu", "index": 0}]
  })");
}

TEST(ImportGraphTest, ImportsValuesReferencesAndTypes) {
  Result<Graph> graph = ImportGraph(ValidDocument());
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_EQ(graph->name(), "t");
  ASSERT_EQ(graph->size(), 7);
  EXPECT_EQ(graph->value(0).kind, ValueKind::kInput);
  EXPECT_EQ(graph->Find("b")->As<ParameterValue>().target, "linear.bias");
  EXPECT_EQ(graph->Find("c")->As<ConstantValue>().scalar, 0.5);
  const OpNode& addmm = graph->Find("addmm")->As<OpNode>();
  EXPECT_EQ(addmm.op_kind(), OpKind::kMatmul);
  EXPECT_EQ(addmm.args[2].As<NodeRef>(), graph->Find("permute")->ref());
  EXPECT_EQ(graph->Find("permute")->As<OpNode>().args[1].As<IntList>(), (IntList{1, 0}));
  EXPECT_FALSE(graph->Find("permute")->type().is_contiguous());
  EXPECT_EQ(graph->outputs(), (std::vector<NodeRef>{graph->Find("relu")->ref()}));
}

TEST(ImportGraphTest, ReadsEveryArgumentKind) {
  Json document = ValidDocument();
  document["nodes"][2]["kwargs"] = Json::parse(R"({
    "i": {"int": -3}, "f": {"float": 1e-05}, "inf": {"float": "-inf"}, "nan": {"float": "nan"},
    "b": {"bool": true}, "n": {"none": true}, "s": {"str": "tanh"}, "d": {"dtype": "bfloat16"},
    "dev": {"device": "cuda:0"}, "l": {"layout": "strided"}, "m": {"memory_format": "channels_last"},
    "fl": {"list": [{"float": 0.5}, {"int": 2}]}, "bl": {"list": [{"bool": false}]},
    "tl": {"list": [{"node": "x"}, {"none": true}]}, "el": {"list": []}})");
  Result<Graph> graph = ImportGraph(document);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  std::map<std::string, Argument> kwargs;
  for (const NamedArgument& kwarg : graph->Find("relu")->As<OpNode>().kwargs)
    kwargs.emplace(kwarg.name, kwarg.argument);
  EXPECT_EQ(kwargs.at("i").As<int64_t>(), -3);
  EXPECT_EQ(kwargs.at("f").As<double>(), 1e-05);
  EXPECT_EQ(kwargs.at("inf").As<double>(), -INFINITY);
  EXPECT_TRUE(std::isnan(kwargs.at("nan").As<double>()));
  EXPECT_EQ(kwargs.at("n").kind(), ArgKind::kNone);
  EXPECT_EQ(kwargs.at("s").As<std::string>(), "tanh");
  EXPECT_EQ(kwargs.at("d").As<DType>(), DType::kBFloat16);
  EXPECT_EQ(kwargs.at("dev").As<DeviceArg>().name, "cuda:0");
  EXPECT_EQ(kwargs.at("m").As<MemoryFormatArg>().name, "channels_last");
  EXPECT_EQ(kwargs.at("fl").As<FloatList>(), (FloatList{0.5, 2.0}));
  EXPECT_EQ(kwargs.at("bl").As<BoolList>(), (BoolList{false}));
  EXPECT_EQ(kwargs.at("tl").As<TensorList>(), (TensorList{NodeRef{0, 0}, std::nullopt}));
  EXPECT_EQ(kwargs.at("el").As<IntList>(), IntList{});
}

// ValidDocument plus a step counter buffer that forward() increments (as a training-mode batch
// norm's num_batches_tracked) and a bias it overwrites with itself.
Json DocumentWithMutations() {
  Json document = ValidDocument();
  document["parameters"].push_back(Json::parse(
      R"({"name": "steps", "target": "counter.steps", "kind": "buffer", "shape": [], "dtype": "int64", "stride": []})"));
  document["nodes"].push_back(Json::parse(R"({"name": "step", "op": "aten.add.Tensor", "args": [{"node": "steps"}, {"int": 1}],
                                              "kwargs": {}, "outputs": [{"shape": [], "dtype": "int64", "stride": []}]})"));
  document["mutations"] = Json::parse(R"([{"target": "counter.steps", "value": {"node": "step"}},
                                          {"target": "linear.bias", "value": {"node": "b", "index": 0}}])");
  return document;
}

TEST(ImportGraphTest, ReadsTheMutationsOfParametersAndBuffers) {
  Result<Graph> graph = ImportGraph(DocumentWithMutations());
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_EQ(graph->mutations(), (std::vector<Mutation>{{"counter.steps", graph->Find("step")->ref()},
                                                       {"linear.bias", graph->Find("b")->ref()}}));
  EXPECT_EQ(graph->FindTarget("counter.steps"), graph->Find("steps"));
  EXPECT_EQ(graph->LiveOuts(), (std::vector<NodeRef>{graph->Find("relu")->ref(), graph->Find("step")->ref(),
                                                     graph->Find("b")->ref()}));
}

TEST(ImportGraphTest, MutationsMayBeAbsent) {
  Result<Graph> graph = ImportGraph(ValidDocument());
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_TRUE(graph->mutations().empty());
}

struct ErrorCase {
  const char* label;
  std::function<void(Json&)> mutate;
  const char* expected;  // a phrase the message must contain
};

const std::vector<ErrorCase>& ErrorCases() {
  static const std::vector<ErrorCase> cases = {
      {"not an object", [](Json& d) { d = Json::array(); }, "must be a JSON object"},
      {"format", [](Json& d) { d["format"] = "kforge-graph-0"; }, "unsupported graph format \"kforge-graph-0\""},
      {"task", [](Json& d) { d.erase("task"); }, "\"task\" must be a string"},
      {"inputs type", [](Json& d) { d["inputs"] = 3; }, "\"inputs\" must be an array"},
      {"input name", [](Json& d) { d["inputs"][0].erase("name"); }, "inputs[0]: \"name\" must be a string"},
      {"dtype", [](Json& d) { d["inputs"][0]["dtype"] = "float8"; }, "inputs[0] \"x\": unknown dtype \"float8\""},
      {"negative dim", [](Json& d) { d["inputs"][0]["shape"][0] = -8; }, "negative dimension"},
      {"stride rank", [](Json& d) { d["inputs"][0]["stride"] = {1}; }, "stride has 1 entries but the shape has rank 2"},
      {"float dim", [](Json& d) { d["inputs"][0]["shape"][0] = 8.5; }, "shape: expected an integer, got 8.5"},
      {"huge dim", [](Json& d) { d["inputs"][0]["shape"][0] = 18446744073709551615ull; }, "does not fit int64"},
      {"input index",
       [](Json& d) {
         d["inputs"].push_back(d["inputs"][0]);
         d["inputs"][1]["name"] = "y";
       },
       "inputs[1] \"y\": index 0 repeated"},
      {"param kind", [](Json& d) { d["parameters"][0]["kind"] = "weight"; },
       "\"kind\" must be \"parameter\" or \"buffer\""},
      {"duplicate", [](Json& d) { d["parameters"][1]["name"] = "x"; }, "parameters[1] \"x\": duplicate name \"x\""},
      {"constant value", [](Json& d) { d["constants"][0]["value"] = "half"; },
       "constants[0] \"c\": value: expected a number"},
      {"constant kind", [](Json& d) { d["constants"][0]["kind"] = "buffer"; }, "\"kind\" must be \"constant\""},
      {"constant shape",
       [](Json& d) {
         d["constants"][0]["shape"] = {2};
         d["constants"][0]["stride"] = {1};
       },
       "has a value but is not 0-d"},
      {"unknown ref", [](Json& d) { d["nodes"][1]["args"][1]["node"] = "nope"; },
       "nodes[1] \"addmm\": args[1]: reference to unknown or later value \"nope\""},
      {"forward ref", [](Json& d) { d["nodes"][0]["args"][0]["node"] = "relu"; }, "unknown or later value \"relu\""},
      {"ref index", [](Json& d) { d["nodes"][2]["args"][0]["index"] = 1; }, "output index 1 out of range"},
      {"ref index type", [](Json& d) { d["nodes"][2]["args"][0]["index"] = "0"; }, "args[0]: expected an integer"},
      {"ref name type", [](Json& d) { d["nodes"][2]["args"][0]["node"] = 5; }, "\"node\" must be a string"},
      {"ref extra key", [](Json& d) { d["nodes"][2]["args"][0]["int"] = 5; }, "only \"node\" and \"index\""},
      {"arg kind",
       [](Json& d) {
         d["nodes"][2]["args"][0] = {{"tensor", 1}};
       },
       "unknown argument kind \"tensor\""},
      {"two kinds",
       [](Json& d) {
         d["nodes"][0]["args"][1] = {{"int", 1}, {"float", 2.0}};
       },
       "exactly one kind"},
      {"arg not object", [](Json& d) { d["nodes"][0]["args"][1] = 1; },
       "args[1]: an argument must be a non-empty object"},
      {"int type", [](Json& d) { d["nodes"][0]["args"][1]["list"][0]["int"] = "1"; },
       "list item 0: expected an integer"},
      {"float word",
       [](Json& d) {
         d["nodes"][2]["kwargs"]["alpha"] = {{"float", "infinity"}};
       },
       "kwargs.alpha: expected a number"},
      {"bool type",
       [](Json& d) {
         d["nodes"][2]["kwargs"]["inplace"] = {{"bool", 1}};
       },
       "\"bool\" must be true or false"},
      {"mixed list",
       [](Json& d) {
         d["nodes"][0]["args"][1]["list"][1] = {{"str", "a"}};
       },
       "unsupported list"},
      {"nested list",
       [](Json& d) {
         d["nodes"][0]["args"][1]["list"][1] = {{"list", Json::array()}};
       },
       "nested list"},
      {"arg dtype",
       [](Json& d) {
         d["nodes"][2]["kwargs"]["dtype"] = {{"dtype", "half"}};
       },
       "unknown dtype \"half\""},
      {"kwargs type", [](Json& d) { d["nodes"][2]["kwargs"] = Json::array(); }, "\"kwargs\" must be an object"},
      {"node outputs", [](Json& d) { d["nodes"][2].erase("outputs"); },
       "nodes[2] \"relu\": \"outputs\" must be an array"},
      {"node output type", [](Json& d) { d["nodes"][2]["outputs"][0] = 1; },
       "outputs[0]: a tensor type must be an object"},
      {"op type", [](Json& d) { d["nodes"][2]["op"] = Json::array(); }, "\"op\" must be a string"},
      {"node not object", [](Json& d) { d["nodes"][0] = "permute"; }, "nodes[0]: must be an object"},
      {"node name", [](Json& d) { d["nodes"][2]["name"] = "relu-1"; }, "name \"relu-1\" is not an identifier"},
      {"graph output index", [](Json& d) { d["outputs"][0]["index"] = 3; }, "outputs[0]: output index 3 out of range"},
      {"graph output ref",
       [](Json& d) {
         d["outputs"][0] = {{"node", "zz"}};
       },
       "outputs[0]: reference to unknown"},
      {"graph output kind",
       [](Json& d) {
         d["outputs"][0] = {{"int", 1}};
       },
       "outputs[0]: must be {\"node\": NAME}"},
      {"no outputs", [](Json& d) { d["outputs"] = Json::array(); }, "the graph returns nothing"},
      {"mutations type", [](Json& d) { d["mutations"] = Json::object(); }, "\"mutations\" must be an array"},
      {"mutation not object", [](Json& d) { d["mutations"] = {3}; }, "mutations[0]: must be an object"},
      {"mutation target type",
       [](Json& d) { d["mutations"] = Json::parse(R"([{"target": 3, "value": {"node": "b"}}])"); },
       "mutations[0]: \"target\" must be a string"},
      {"mutation unknown target",
       [](Json& d) { d["mutations"] = Json::parse(R"([{"target": "linear.gamma", "value": {"node": "b"}}])"); },
       "mutations[0] \"linear.gamma\": \"linear.gamma\" is not a parameter or buffer of the graph"},
      {"mutation of an input",
       [](Json& d) { d["mutations"] = Json::parse(R"([{"target": "x", "value": {"node": "x"}}])"); },
       "\"x\" is not a parameter or buffer"},
      {"mutation value missing", [](Json& d) { d["mutations"] = Json::parse(R"([{"target": "linear.bias"}])"); },
       "mutations[0] \"linear.bias\": value: must be {\"node\": NAME}"},
      {"mutation value ref",
       [](Json& d) { d["mutations"] = Json::parse(R"([{"target": "linear.bias", "value": {"node": "zz"}}])"); },
       "mutations[0] \"linear.bias\": value: reference to unknown or later value \"zz\""},
      {"mutation value index",
       [](Json& d) { d["mutations"] = Json::parse(R"([{"target": "linear.bias", "value": {"node": "b", "index": 1}}])"); },
       "value: output index 1 out of range"},
      {"mutated twice",
       [](Json& d) {
         d["mutations"] = Json::parse(R"([{"target": "linear.bias", "value": {"node": "b"}},
                                          {"target": "linear.bias", "value": {"node": "b"}}])");
       },
       "mutations[1] \"linear.bias\": \"linear.bias\" is mutated twice"},
      {"mutation shape",
       [](Json& d) { d["mutations"] = Json::parse(R"([{"target": "linear.bias", "value": {"node": "relu"}}])"); },
       "mutation of linear.bias: the new value is f32[8, 32], the parameter is f32[32]"},
      {"mutation dtype",
       [](Json& d) {
         d = DocumentWithMutations();
         d["mutations"][0]["target"] = "linear.bias";
         d["mutations"].erase(1);
       },
       "mutation of linear.bias: the new value is i64[], the parameter is f32[32]"},
      {"python number not a bool", [](Json& d) { d["inputs"][0]["python_number"] = 1; },
       "python_number is not a boolean"},
      {"python number with a shape", [](Json& d) { d["inputs"][0]["python_number"] = true; },
       "input \"x\" is a Python number but is not 0-d"},
      {"bad shapes",
       [](Json& d) {
         d["nodes"][1]["outputs"][0]["shape"] = {8, 16};
         d["nodes"][1]["outputs"][0]["stride"] = {16, 1};
       },
       "%addmm: output shape [8, 16] is not [8, 32]"},
  };
  return cases;
}

TEST(ImportGraphTest, MalformedInputIsInvalidArgumentNamingTheField) {
  for (const ErrorCase& c : ErrorCases()) {
    Json document = ValidDocument();
    c.mutate(document);
    Result<Graph> graph = ImportGraph(document);
    ASSERT_FALSE(graph.ok()) << c.label;
    EXPECT_EQ(graph.status().code(), StatusCode::kInvalidArgument) << c.label;
    EXPECT_NE(graph.status().message().find(c.expected), std::string::npos)
        << c.label << ": got \"" << graph.status().message() << "\"";
  }
}

TEST(ImportGraphTest, OptionalFieldsMayBeAbsent) {
  Json document = ValidDocument();
  document["inputs"][0].erase("stride");
  document["constants"][0].erase("kind");
  document["constants"][0]["value"] = true;
  document.erase("parameters");
  document["nodes"][0]["args"][0] = {{"node", "x"}};
  document["nodes"][0]["outputs"][0] = {{"shape", {64, 8}}, {"dtype", "float32"}};
  document["nodes"][1] = {{"name", "addmm"},
                          {"op", "aten.mm.default"},
                          {"args", {{{"node", "x"}}, {{"node", "permute"}}}},
                          {"outputs", {{{"shape", {8, 8}}, {"dtype", "float32"}}}}};
  document["nodes"][2]["outputs"][0] = {{"shape", {8, 8}}, {"dtype", "float32"}};
  Result<Graph> graph = ImportGraph(document);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_EQ(graph->Find("x")->type().stride, (std::vector<int64_t>{64, 1}));
  EXPECT_EQ(graph->Find("c")->As<ConstantValue>().scalar, 1.0);
  EXPECT_TRUE(graph->Find("addmm")->As<OpNode>().kwargs.empty());
}

// A number the task passes as a Python scalar is a 0-d input marked as such (it survives a copy).
TEST(ImportGraphTest, ReadsAPythonNumberInput) {
  Json document = ValidDocument();
  document["inputs"].push_back(
      Json::parse(R"({"name": "s", "index": 1, "shape": [], "dtype": "float32", "stride": [], "python_number": true})"));
  Result<Graph> graph = ImportGraph(document);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_TRUE(graph->Find("s")->As<InputValue>().python_number);
  EXPECT_FALSE(graph->Find("x")->As<InputValue>().python_number);
  Result<Graph> copy = GraphRewriter().Rewrite(*graph);
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_TRUE(copy->Find("s")->As<InputValue>().python_number);
  EXPECT_NE(PrintGraph(*copy).find("%s: f32[] (a Python number)"), std::string::npos);
}

TEST(ImportGraphTest, TextThatIsNotJsonIsAnError) {
  Result<Graph> graph = ImportGraphText("{\"format\": ", "graph.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("malformed JSON in graph.json"), std::string::npos);
}

}  // namespace
}  // namespace kforge::ir
