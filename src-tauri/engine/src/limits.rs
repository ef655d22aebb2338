//! The bounds of every bounded setting, each written once: its key, the label its one error
//! message names it by, its range, its step, its default. A leaf (it names no other module), so
//! the parts that check a value against a bound use the same row: the app's settings
//! (`settings/table.rs`, whose table pairs each row with its `Settings` field and is what the
//! window gets, `settings::schema`), a conversation's own (`store::ConversationSettings`), a
//! server's own timeout (`mcp::config`) and the image downscaler (`media`).

/// One bounded setting. Numbers are `f64` (every bound here is exact in one); a whole-number
/// setting has `whole`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Its key, as the settings file and the window name it (camelCase).
    pub key: &'static str,
    /// What its error message calls it: "Max tool rounds must be …".
    pub label: &'static str,
    pub min: f64,
    pub max: f64,
    /// How far one step of the window's input goes.
    pub step: f64,
    /// Only whole numbers.
    pub whole: bool,
    /// Said after the range in its message ("from 1 to 3600 seconds"); empty for none.
    pub unit: &'static str,
    /// Its value when none is set; `None`: it may be empty (the model's or the app's default).
    pub default: Option<f64>,
}

impl Limit {
    /// Whether `v` is a value it allows.
    pub fn allows(&self, v: f64) -> bool {
        v.is_finite() && (self.min..=self.max).contains(&v) && (!self.whole || v.fract() == 0.0)
    }

    /// The one message for a value it does not allow.
    pub fn message(&self) -> String {
        let kind = if self.whole {
            "a whole number"
        } else {
            "a number"
        };
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        format!(
            "{} must be {kind} from {} to {}{unit}",
            self.label, self.min, self.max
        )
    }

    /// `Ok` when it allows `v`, else its message.
    pub fn check(&self, v: f64) -> Result<(), String> {
        if self.allows(v) {
            Ok(())
        } else {
            Err(self.message())
        }
    }

    /// `v` brought inside the range.
    pub fn clamp(&self, v: f64) -> f64 {
        v.clamp(self.min, self.max)
    }

    /// Its default, for a setting that has one (not an optional one).
    pub fn default_value(&self) -> f64 {
        self.default
            .unwrap_or_else(|| panic!("{} has no default: it may be empty", self.key))
    }
}

/// Rounds of tool calls in one turn before the loop stops.
pub const MAX_ITERATIONS: Limit = Limit {
    key: "maxIterations",
    label: "Max tool rounds",
    min: 1.0,
    max: 100.0,
    step: 1.0,
    whole: true,
    unit: "",
    default: Some(5.0),
};

/// How many tools the model is offered at most.
pub const MAX_OFFERED_TOOLS: Limit = Limit {
    key: "maxOfferedTools",
    label: "Tools offered at once",
    min: 1.0,
    max: 1000.0,
    step: 1.0,
    whole: true,
    unit: "",
    default: Some(20.0),
};

/// The longest wait for one tool call, in seconds: the app's default, and a server's own
/// `timeout` (which may be empty: the app's).
pub const TOOL_TIMEOUT: Limit = Limit {
    key: "toolTimeoutSecs",
    label: "The tool timeout",
    min: 1.0,
    max: 3600.0,
    step: 1.0,
    whole: true,
    unit: "seconds",
    default: Some(60.0),
};

/// The longest side of an image as kept and sent (attached ones and tools'), in pixels; the
/// default is what local vision models use (Gemma 3 sees 896 px, Llama 3.2 Vision 1120, Qwen
/// 2.5-VL more at a cost in tokens).
pub const IMAGE_MAX_SIDE: Limit = Limit {
    key: "imageMaxSide",
    label: "The largest image side",
    min: 256.0,
    max: 4096.0,
    step: 1.0,
    whole: true,
    unit: "pixels",
    default: Some(1024.0),
};

/// Sampling temperature (the app's default and a conversation's own); empty: the model's.
pub const TEMPERATURE: Limit = Limit {
    key: "temperature",
    label: "The temperature",
    min: 0.0,
    max: 2.0,
    step: 0.1,
    whole: false,
    unit: "",
    default: None,
};

/// Context length, Ollama's `num_ctx` (the app's default and a conversation's own); empty: the
/// model's.
pub const NUM_CTX: Limit = Limit {
    key: "numCtx",
    label: "The context length",
    min: 256.0,
    max: 1_048_576.0,
    step: 256.0,
    whole: true,
    unit: "tokens",
    default: None,
};

/// A context length kept per model (`modelContexts`): the range of [`NUM_CTX`]; a model not
/// named has none of its own.
pub const MODEL_CONTEXT: Limit = Limit {
    key: "modelContexts",
    label: "A model's context length",
    ..NUM_CTX
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_allowed_inside_the_range_and_whole_where_it_must_be() {
        assert!(MAX_ITERATIONS.allows(1.0) && MAX_ITERATIONS.allows(100.0));
        for bad in [0.0, 101.0, 2.5, f64::NAN, f64::INFINITY] {
            assert!(!MAX_ITERATIONS.allows(bad), "{bad}");
        }
        assert!(TEMPERATURE.allows(0.7) && !TEMPERATURE.allows(-0.1));
        assert_eq!(
            MAX_ITERATIONS.check(0.0).unwrap_err(),
            "Max tool rounds must be a whole number from 1 to 100"
        );
        assert_eq!(
            TOOL_TIMEOUT.message(),
            "The tool timeout must be a whole number from 1 to 3600 seconds"
        );
        assert_eq!(
            TEMPERATURE.message(),
            "The temperature must be a number from 0 to 2"
        );
        assert_eq!(
            (MODEL_CONTEXT.min, MODEL_CONTEXT.max),
            (NUM_CTX.min, NUM_CTX.max)
        );
    }
}
