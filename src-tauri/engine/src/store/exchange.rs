//! Export and import: a conversation as JSON (everything: every branch, tool calls, thinking,
//! settings; imported back losslessly) and as Markdown (the shown branch, for reading).
