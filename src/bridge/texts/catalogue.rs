//! The message catalogue: every piece of wording clawmux writes to chat,
//! by a typed key ([`Msg`]), in English and Simplified Chinese. A key's
//! two texts take the same `{placeholders}` (checked by a test), filled
//! with literal values (names, commands, an agent's words), which are
//! never translated. Cards carry both texts (`feishu::card`); the console
//! picks one (`i18n::Lang::from_env`).

use crate::i18n::{Lang, Text, fill};

/// Declares [`Msg`] and its two texts: `Key: "English" => "中文";`.
macro_rules! catalogue {
    ($($(#[$doc:meta])* $key:ident : $en:expr => $zh:expr ;)*) => {
        /// A message of clawmux's own, by name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Msg {
            $($(#[$doc])* $key,)*
        }

        impl Msg {
            /// Every key, for the catalogue's tests.
            pub const ALL: &'static [Msg] = &[$(Msg::$key,)*];

            /// The template of this message in `lang`.
            pub fn template(self, lang: Lang) -> &'static str {
                match (self, lang) {
                    $(
                        (Msg::$key, Lang::En) => $en,
                        (Msg::$key, Lang::Zh) => $zh,
                    )*
                }
            }
        }
    };
}

impl Msg {
    /// The message in both languages (a template without placeholders).
    pub fn text(self) -> Text {
        self.with(&[])
    }

    /// The message in both languages with its `{placeholders}` filled.
    pub fn with(self, args: &[(&str, &str)]) -> Text {
        Text::both(
            fill(self.template(Lang::En), args),
            fill(self.template(Lang::Zh), args),
        )
    }
}

impl Msg {
    /// The message with arguments that are themselves worded per language
    /// (a translated phrase filled into a translated sentence).
    pub fn with_each(self, args: impl Fn(Lang) -> Vec<(&'static str, String)>) -> Text {
        let fill_in = |lang: Lang| {
            let args = args(lang);
            let args: Vec<(&str, &str)> = args.iter().map(|(k, v)| (*k, v.as_str())).collect();
            fill(self.template(lang), &args)
        };
        Text::both(fill_in(Lang::En), fill_in(Lang::Zh))
    }
}

impl From<Msg> for Text {
    fn from(m: Msg) -> Text {
        m.text()
    }
}

catalogue! {
    // Card titles.
    ApprovalNeeded: "Approval needed" => "需要审批";
    ApprovalAnswered: "Approval answered" => "审批已处理";
    ApprovalGone: "Approval no longer pending" => "审批已失效";
    ScreenOf: "Screen of {project}" => "{project} 的屏幕";
    ScreenPanel: "Screen" => "屏幕";
    ScreenAsText: "Screen as text" => "屏幕文字";
    Projects: "Projects" => "项目";
    Help: "Help" => "帮助";
    HelpTitle: "clawmux help" => "clawmux 帮助";
    Interrupt: "Interrupt" => "中断";
    Queued: "Queued" => "排队中";
    Running: "Running…" => "运行中…";
    Status: "Status" => "状态";
    ProjectUnavailable: "Project unavailable" => "项目不可用";
    ImageNotSaved: "Image not saved" => "图片未保存";
    MissingArgument: "Missing argument" => "缺少参数";
    UnknownCommand: "Unknown command" => "未知命令";
    ProjectReady: "Project ready" => "项目已就绪";
    ProjectSelected: "Project selected" => "已切换项目";
    PermissionMode: "Permission mode" => "权限模式";
    Cancelled: "Cancelled" => "已取消";
    NothingToCancel: "Nothing to cancel" => "没有可取消的命令";
    NotAllowed: "Not allowed" => "无权操作";
    NoProjectSelected: "No project selected" => "未选择项目";
    NoSuchProject: "No such project" => "项目不存在";
    InvalidProjectName: "Invalid project name" => "项目名无效";
    NameTaken: "Name taken" => "名称已被占用";
    UnknownHost: "Unknown host" => "未知主机";
    NoApprovalPending: "No approval pending" => "没有待处理的审批";
    CouldNotAnswer: "Could not answer" => "无法回答";
    CouldNotCancel: "Could not cancel" => "无法取消";
    CouldNotSwitchMode: "Could not switch the mode" => "无法切换模式";
    ProjectElsewhere: "Project exists elsewhere" => "项目在其他主机上";
    CannotSendToAgent: "Cannot send that to the agent" => "无法发送给智能体";
    AgentError: "The agent reported an error" => "智能体报告了错误";
    CommandFailed: "Command failed" => "命令失败";
    SessionLost: "Session lost" => "会话丢失";
    NotAnswered: "Not answered" => "未作答";
    CannotType: "Cannot type that" => "无法输入";
    CheckPrompt: "Check this prompt" => "请核对此提示";
    AnswerNotTaken: "Answer not taken" => "回答未被接受";
    CouldNotAnswerApproval: "Could not answer the approval" => "无法回答该审批";
    SlowDown: "Slow down" => "请慢一点";
    PairingNeeded: "Pairing needed" => "需要配对";
    HostUnreachable: "Host unreachable" => "主机无法连接";
    Reconnected: "Reconnected" => "已重新连接";
    Adopted: "Adopted" => "已接管";
    Released: "Released" => "已释放";
    CannotAdopt: "Cannot adopt that" => "无法接管";
    CannotWatch: "Cannot watch that pane" => "无法监视该窗格";
    NotAdopted: "Not adopted" => "不是接管的窗格";
    KeysSent: "Keys sent" => "按键已发送";
    KeysNotSent: "Keys not sent" => "按键未发送";
    InterruptNotConfirmed: "Interrupt not confirmed" => "中断未确认";
    FileTitle: "File" => "文件";
    FileNotSent: "File not sent" => "文件未发送";
    Reminders: "Reminders" => "提醒";
    EventLog: "Event log" => "事件日志";
    ApprovalsOff: "Approvals off" => "审批已关闭";
    NoScreen: "No screen" => "没有屏幕";
    CardNotDelivered: "A card was not delivered" => "有一张卡片未能送达";
    AgentUntested: "Claude Code {version} is not a tested release" => "Claude Code {version} 不是测试过的版本";
    AnswerOf: "Answer: {title}" => "回答：{title}";
    Finished: "Finished in {seconds}s" => "已完成，用时 {seconds} 秒";
    StoppedAfter: "Stopped after {seconds}s" => "已停止，运行了 {seconds} 秒";
    RefusedByAgent: "Refused by the agent" => "被智能体拒绝";
    FailedAfter: "Failed after {seconds}s" => "出错了，运行了 {seconds} 秒";
    AgentRefused: "The agent refused: {title}" => "智能体拒绝了：{title}";
    StoppedTitle: "Stopped: {title}" => "已停止：{title}";
    NoOutputTitle: "No output: {title}" => "没有输出：{title}";
    TimedOut: "Timed out after {seconds}s: {title}" => "{seconds} 秒后超时：{title}";
    NotSubmitted: "Not submitted: {title}" => "未提交：{title}";
    ErrorTitle: "Error: {title}" => "出错了：{title}";
    FailedTitle: "Failed: {title}" => "失败：{title}";
    InboxTitle: "Inbox: {n} waiting" => "待处理：{n} 项";
    StillWaiting: "Still waiting ({minutes} min)" => "仍在等待（{minutes} 分钟）";

    // What an approval asks about (its card's subtitle).
    KindPermission: "permission" => "权限";
    KindEdit: "edit" => "修改文件";
    KindCreate: "create" => "新建文件";
    KindQuestion: "question" => "提问";
    KindPlan: "plan" => "计划";
    KindCheckpoint: "checkpoint" => "检查点";
    KindDialog: "dialog" => "对话框";

    // Card text.
    SeveralAtOnce: "Several at once: reply to this card with their numbers, e.g. `1,3`."
        => "可多选：回复此卡片并写上编号，例如 `1,3`。";
    ChoseAt: "{who} chose **{choice}** at {when}" => "{who} 于 {when} 选择了 **{choice}**";
    AnsweredInTerminal: "Answered in the terminal." => "已在终端中处理。";
    NoProjectsConfigured: "No projects configured." => "尚未配置项目。";
    CurrentProject: "Current project: **{project}**" => "当前项目：**{project}**";
    NoCurrentProject: "No current project." => "未选择当前项目。";
    ChooseProject: "Choose a project" => "选择项目";
    MoreProjects: "{n} more not shown: `/gsd:status` lists them all."
        => "另有 {n} 个未显示：`/gsd:status` 可列出全部。";
    RunCommand: "Run {command}" => "运行 {command}";
    SummaryCounts: "**{lines} lines, {bytes} bytes.** The whole output is in the file `{file}` below."
        => "**共 {lines} 行，{bytes} 字节。** 完整输出见下方文件 `{file}`。";
    FirstLines: "First {n} lines:" => "前 {n} 行：";
    LinesNotShown: "… {hidden} lines not shown … last {n} lines:"
        => "…… 省略 {hidden} 行 …… 最后 {n} 行：";
    NoOutput: "_(no output)_" => "_（没有输出）_";
    NoPicture: "No picture: {why}" => "没有图片：{why}";
    WaitingPermission: "waiting for permission" => "等待授权";
    WaitingInput: "waiting for input" => "等待输入";
    NoCardShowsPrompt: "No card shows this prompt: see it with `/gsd:screen`, answer with `/gsd:keys`."
        => "没有卡片显示此提示：用 `/gsd:screen` 查看，用 `/gsd:keys` 回答。";
    SendMessageToGoOn: "Send it a message to go on." => "发一条消息让它继续。";
    MinutesShort: "{minutes} min" => "{minutes} 分钟";
    WaitingMinutes: "waiting {minutes} min" => "已等待 {minutes} 分钟";
    NothingWaits: "Nothing waits for an answer." => "没有等待回答的事项。";
    InboxMore: "…and {n} more; answer these first, then send `/gsd:inbox` again."
        => "……还有 {n} 项；请先处理以上各项，再发送 `/gsd:inbox`。";

    // Messages of the core.
    OnlyApproversSessions: "Only approvers may list the panes of every host."
        => "只有审批人可以列出所有主机的窗格。";
    OnlyApproversInterrupt: "Only approvers may interrupt a project's agent."
        => "只有审批人可以中断项目的智能体。";
    OnlyApproversMode: "Only approvers may switch a project's permission mode."
        => "只有审批人可以切换项目的权限模式。";
    OnlyApproversKeys: "Only approvers may send keys to a project's pane."
        => "只有审批人可以向项目的窗格发送按键。";
    OnlyApproversAdopt: "Only approvers may adopt or release panes."
        => "只有审批人可以接管或释放窗格。";
    OnlyApproversAdopted: "**{project}** is a pane adopted from a terminal: only approvers may use it, see its screen or type into it."
        => "**{project}** 是从终端接管的窗格：只有审批人可以使用它、查看它的屏幕或向它输入。";
    CreateOrList: "Create it with `/gsd:new-project {name}`, or list projects with `/gsd:projects`."
        => "用 `/gsd:new-project {name}` 创建它，或用 `/gsd:projects` 列出项目。";
    CreateOrPick: "Create one with `/gsd:new-project <name>` or pick one with `/gsd:use <name>`."
        => "用 `/gsd:new-project <name>` 创建一个，或用 `/gsd:use <name>` 选择一个。";
    MessagesGoTo: "Messages now go to **{name}**." => "消息现在发给 **{name}**。";
    RunsElsewhere: "**{name}** already runs on **{on}**: a project stays on the host it was created on. Pick another name for one on **{asked}**."
        => "**{name}** 已在 **{on}** 上运行：项目只在创建它的主机上运行。要在 **{asked}** 上创建，请换一个名字。";
    BeingAdopted: "A pane is being adopted as **{name}** right now."
        => "正在以 **{name}** 的名字接管一个窗格。";
    PickAnotherName: "Pick another name." => "请换一个名字。";
    HostsFromConfig: "Projects run on the hosts of the config's [hosts] tables."
        => "项目运行在配置文件 [hosts] 表所列的主机上。";
    AlreadyExists: "**{name}** already exists; messages now go to it."
        => "**{name}** 已存在；消息现在发给它。";
    Created: "Created **{name}** in `{workspace}`. Starting the agent and GSD's project setup…"
        => "已在 `{workspace}` 创建 **{name}**。正在启动智能体和 GSD 的项目设置…";
    CreatedOnHost: "Created **{name}** on host **{host}** in `{workspace}`. Starting the agent and GSD's project setup…"
        => "已在主机 **{host}** 的 `{workspace}` 创建 **{name}**。正在启动智能体和 GSD 的项目设置…";
    NoProjectsYet: "No projects yet: `/gsd:new-project <name>`."
        => "还没有项目：`/gsd:new-project <name>`。";
    StatusHeader: "| project | state | mode | progress | queued | host |\n|---|---|---|---|---|---|\n"
        => "| 项目 | 状态 | 模式 | 进度 | 排队 | 主机 |\n|---|---|---|---|---|---|\n";
    GsdPlanning: "\n**GSD planning** (`.planning/STATE.md`)\n"
        => "\n**GSD 计划**（`.planning/STATE.md`）\n";
    ModeIs: "**{project}** is in **{mode}** mode: {reach}."
        => "**{project}** 处于 **{mode}** 模式：{reach}。";
    ModeNow: "**{project}** is in **{mode}** mode now: {reach}."
        => "**{project}** 现在处于 **{mode}** 模式：{reach}。";
    NoModeYet: "**{project}**'s agent shows no permission mode yet."
        => "**{project}** 的智能体尚未显示权限模式。";
    SentKeysTo: "Sent {keys} to the agent of **{project}**."
        => "已向 **{project}** 的智能体发送 {keys}。";
    SentKeysCodeTo: "Sent `{keys}` to the agent of **{project}**."
        => "已向 **{project}** 的智能体发送 `{keys}`。";
    NothingRunning: "Nothing is running in **{project}**, so nothing was sent to its agent."
        => "**{project}** 中没有正在运行的命令，因此没有向它的智能体发送任何按键。";
    QueuedAt: "The agent is busy; your command is number {position} in the queue."
        => "智能体正忙；你的命令排在第 {position} 位。";
    RefusalGuidance: "The agent did not run it. For a `/gsd:` command, check that GSD is installed for this project's agent; `/gsd:help` lists what clawmux answers itself."
        => "智能体没有执行它。如果是 `/gsd:` 命令，请检查此项目的智能体是否安装了 GSD；`/gsd:help` 列出了 clawmux 自己回答的命令。";
    NoOutputFor: "**No output for {seconds} s**: only the agent's busy row moves."
        => "**{seconds} 秒没有输出**：只有智能体的忙碌提示在动。";
    NoOutputGuidance: "It may be retrying an error without end (an API outage, a rate limit), or thinking for long. Interrupt it, or wait: this card says when output resumes."
        => "它可能在无休止地重试一个错误（API 故障、限流），也可能在长时间思考。可以中断它，或者继续等待：输出恢复时这张卡片会更新。";
    OutputResumed: "Output resumed after {seconds} s without any." => "{seconds} 秒没有输出之后，输出已恢复。";
    StallEnded: "The command ended." => "命令已结束。";
    WaitsForInstead: "{line}\n\nThe agent waits for what to do instead: send it as a message."
        => "{line}\n\n智能体在等你告诉它接下来做什么：直接发消息即可。";
    NothingRecognised: "clawmux recognised nothing on this screen during the command: the agent's screen may have changed; the operator can check with `clawmux doctor --agent`."
        => "命令运行期间 clawmux 没有在屏幕上识别出任何内容：智能体的界面可能变了；管理员可以用 `clawmux doctor --agent` 检查。";
    NotSubmittedGuidance: "The agent left your command in its input box: Enter was pressed twice, and 20 s later it still sat there. Check the screen below; send `/gsd:cancel` or answer in the terminal."
        => "你的命令还留在智能体的输入框里：已按过两次 Enter，20 秒后仍未提交。请查看下面的屏幕；发送 `/gsd:cancel`，或在终端中处理。";
    TimedOutGuidance: "The command is still running in its pane. Send `/gsd:cancel` to stop it or `/gsd:status` to check."
        => "命令仍在窗格中运行。发送 `/gsd:cancel` 停止它，或发送 `/gsd:status` 查看。";
    SessionLostRetrying: "The tmux session of **{project}** was lost ({reason}). Recreating it, restoring context, and retrying your command once."
        => "**{project}** 的 tmux 会话丢失了（{reason}）。正在重建会话、恢复上下文，并重试一次你的命令。";
    SessionLostAgain: "The tmux session of **{project}** was lost again ({reason})."
        => "**{project}** 的 tmux 会话再次丢失（{reason}）。";
    PromptClosed: "This prompt was answered or closed already; nothing was typed. To tell the agent more, send a new message (not a reply to the prompt's card)."
        => "此提示已被回答或已关闭，没有输入任何内容。要告诉智能体更多信息，请发一条新消息（不要回复提示的卡片）。";
    PromptBeingAnswered: "This prompt is being answered already; nothing more was typed."
        => "此提示正在被回答，没有再输入内容。";
    PromptTakesOptions: "This prompt takes one of its options: {options}. Press its button, or reply with the option's name or number."
        => "此提示只接受它的选项之一：{options}。请点按钮，或回复选项的名称或编号。";
    AlreadyAnswered: "This approval was already answered." => "此审批已被处理。";
    ButtonMismatch: "This button does not match its approval." => "此按钮与它的审批不匹配。";
    BeingAnswered: "This approval is being answered." => "此审批正在处理中。";
    ReplyToAnswer: "Reply to this card with your answer: it is typed in the agent's text field."
        => "回复此卡片写下你的回答：它会被输入到智能体的文本框中。";
    Sending: "Sending: {label}" => "正在发送：{label}";
    CheckDialog: "{detail}.\n\nThe buttons follow the dialog on screen: check it with `/gsd:screen` before answering."
        => "{detail}。\n\n按钮以屏幕上的对话框为准：回答前请用 `/gsd:screen` 核对。";
    PressAgain: "Press the button again, or answer in the terminal."
        => "请再按一次按钮，或在终端中回答。";
    TooFast: "You are sending messages faster than this bot accepts; this one was dropped. Try again in a minute."
        => "你发消息的速度超过了机器人的接收上限，这条消息已被丢弃。请一分钟后再试。";
    PairingCode: "I don't know you yet. Your pairing code is **{code}**.\nAsk the operator to run `clawmux pairing approve {code}`."
        => "我还不认识你。你的配对码是 **{code}**。\n请让管理员运行 `clawmux pairing approve {code}`。";
    NotAllowedBot: "Sorry, you are not allowed to use this bot. Ask its operator for access."
        => "抱歉，你没有使用此机器人的权限。请向管理员申请。";
    ButtonNotRecognised: "This button is not recognised" => "无法识别此按钮";
    CannotSendCommandsHere: "You cannot send commands here" => "你不能在这里发送命令";
    ProjectGone: "That project is gone" => "该项目已不存在";
    SentCommand: "Sent {command}" => "已发送 {command}";
    OnlyApproversMayInterrupt: "Only approvers may interrupt" => "只有审批人可以中断";
    NoLongerRunning: "That command is no longer running" => "该命令已不在运行";
    Interrupting: "Interrupting…" => "正在中断…";
    InterruptUnconfirmed: "{keys} went to the agent of **{project}** {seconds}s ago, and its turn still runs."
        => "{seconds} 秒前已向 **{project}** 的智能体发送 {keys}，但它仍在运行。";
    InterruptAgain: "Interrupt again, or send other keys with `/gsd:keys` (e.g. `Ctrl-C`)."
        => "请再中断一次，或用 `/gsd:keys` 发送其他按键（如 `Ctrl-C`）。";
    HostDown: "The connection to the tmux server of **{project}** ({host}) ended, and reconnecting failed: {error}\nTrying again with backoff; your command is kept."
        => "与 **{project}** 的 tmux 服务器（{host}）的连接已断开，重连失败：{error}\n将逐步延长间隔继续重试；你的命令会保留。";
    HostBack: "The connection to **{project}** was lost ({reason}) and is back. The command goes on; its result marks where output may be missing."
        => "与 **{project}** 的连接曾断开（{reason}），现已恢复。命令继续运行；结果中会标出可能缺失输出的位置。";
    ProjectExists: "A project named **{name}** exists already." => "名为 **{name}** 的项目已存在。";
    NameAsUsage: "Name the project with `as NAME`, e.g. `/gsd:adopt work:1.0 as api`."
        => "用 `as NAME` 给项目命名，例如 `/gsd:adopt work:1.0 as api`。";
    PickAnotherAs: "Pick another name with `as NAME`." => "用 `as NAME` 换一个名字。";
    MadeWhileLooking: "A project named **{name}** was made while its pane was looked for."
        => "在查找窗格期间，已经有人创建了名为 **{name}** 的项目。";
    AdoptUnderAnother: "Adopt it under another name with `as NAME`." => "用 `as NAME` 以另一个名字接管它。";
    OwnSession: "Session {session} is clawmux's own; its projects are watched already."
        => "会话 {session} 是 clawmux 自己的，它的项目已在监视中。";
    AdoptedAs: "That pane is adopted already, as **{name}**." => "该窗格已被接管，名为 **{name}**。";
    Watching: "Watching pane {pane} of session **{session}**{on} ({cols}x{rows}) as **{name}**; messages now go to it. Nothing was restarted or resized. `/gsd:release {name}` stops watching."
        => "正在以 **{name}** 监视会话 **{session}**{on} 的窗格 {pane}（{cols}x{rows}），消息现在发给它。没有重启或调整任何东西。`/gsd:release {name}` 可停止监视。";
    OnHost: " on **{host}**" => "（主机 **{host}**）";
    CreatedByClawmux: "**{name}** was created by clawmux; release only lets go of adopted panes."
        => "**{name}** 是 clawmux 创建的；release 只能释放接管的窗格。";
    NoProjectNamed: "No project is named **{name}**." => "没有名为 **{name}** 的项目。";
    NoLongerWatching: "No longer watching **{name}** (pane {pane}); the pane is as it was."
        => "已停止监视 **{name}**（窗格 {pane}）；窗格保持原样。";
    AdoptedNoFiles: "**{project}** is a pane adopted from a terminal, with no workspace of clawmux's: `/gsd:file` sends files only from projects clawmux created."
        => "**{project}** 是从终端接管的窗格，没有 clawmux 的工作区：`/gsd:file` 只发送 clawmux 创建的项目中的文件。";
    FileSize: "`{file}` ({size} bytes)" => "`{file}`（{size} 字节）";
    RemindMinutes: "A prompt waiting longer than {n} min is shown here again, once."
        => "等待超过 {n} 分钟的提示会在这里再显示一次。";
    RemindSeconds: "A prompt waiting longer than {n} s is shown here again, once."
        => "等待超过 {n} 秒的提示会在这里再显示一次。";
    NoReminders: "No reminders in this chat." => "此会话没有设置提醒。";
    FeishuRefusedCard: "Feishu refused a card (error {code}: {msg})."
        => "飞书拒收了一张卡片（错误 {code}：{msg}）。";
    CardUndeliverable: "A card could not be delivered: {msg}." => "有一张卡片无法送达：{msg}。";
    LaterCardsFine: "{what}\n\nLater cards are not affected. The operator can see it in the event log (`card_dead_letter`)."
        => "{what}\n\n之后的卡片不受影响。管理员可以在事件日志（`card_dead_letter`）中查看。";

    LogFailing: "clawmux cannot write its event log ({error}). Commands still run; the records missed are counted and the count is written once the disk has room."
        => "clawmux 无法写入事件日志（{error}）。命令照常运行；遗漏的记录会被计数，等磁盘有空间时写入该数目。";
    LogOk: "clawmux writes its event log again." => "clawmux 已恢复写入事件日志。";
    ApprovalsOffText: "**{project}** runs in **{mode}** mode: {unasked}, so those approvals will not reach this chat. `/gsd:mode manual` brings them back (approvers)."
        => "**{project}** 在 **{mode}** 模式下运行：{unasked}，这些审批不会发到此会话。`/gsd:mode manual` 可恢复（仅限审批人）。";
    NoPaneAttached: "**{project}** has no pane attached: {why}." => "**{project}** 没有关联的窗格：{why}。";

    // A project's Claude Code is a release nobody tested (`daemon::version_watch`).
    AgentUntestedIntro: "**{project}** runs Claude Code {version}; clawmux is tested with {tested}. Claude Code updates itself, and a new release can change the screens clawmux reads, so clawmux ran its offline self-check (`clawmux doctor --agent`) on it."
        => "**{project}** 运行的是 Claude Code {version}；clawmux 测试过的版本是 {tested}。Claude Code 会自行更新，新版本可能改变 clawmux 读取的界面，所以 clawmux 对它运行了离线自检（`clawmux doctor --agent`）。";
    AgentCheckPassed: "Still detected: {detected}. Nothing has stopped working."
        => "仍能识别：{detected}。目前没有功能失效。";
    AgentCheckMissed: "Still detected: {detected}. **Not detected: {missed}**: this chat will not hear of those; when a command seems stuck, look at the screen (`/gsd:screen`)."
        => "仍能识别：{detected}。**无法识别：{missed}**：此会话不会收到这些通知；命令看似卡住时，请查看屏幕（`/gsd:screen`）。";
    AgentCheckNotRun: "The self-check could not finish: {error}. Until it can, compare what this chat shows with the screen (`/gsd:screen`)."
        => "自检未能完成：{error}。在它能完成之前，请对照此会话显示的内容和屏幕（`/gsd:screen`）。";
    AgentPinAdvice: "To stay on a tested release: `{pin}`, and start the agent with `{off}` in its environment (Claude Code updates itself otherwise), e.g. `[agent] command = \"env {off} claude\"`; then restart the project's session."
        => "要保持在测试过的版本：`{pin}`，并在智能体的环境中加上 `{off}` 启动它（否则 Claude Code 会自行更新），例如 `[agent] command = \"env {off} claude\"`；然后重启该项目的会话。";
    AgentRecordAdvice: "To help clawmux support {version}: record the pane while it misbehaves, `{record}` (Ctrl-C stops it), and send the file with a bug report."
        => "想帮助 clawmux 支持 {version}：在它出问题时录制窗格，`{record}`（按 Ctrl-C 停止），并把文件附在问题报告里。";
    SignalPermission: "permission prompts" => "权限提示";
    SignalCompletion: "turn ends" => "回合结束";
    SignalQuestion: "questions" => "提问";
    SignalApiError: "API errors" => "API 错误";
    NothingDetected: "nothing" => "无";

    ImageNotSavedText: "The image was not saved: {why}." => "图片未保存：{why}。";
    // A built-in used wrongly (`router::Usage`, `keys::KeysError`).
    UsageUnknownAgent: "unknown agent `{given}`: `/gsd:new-project <name> --agent <{agents}>`"
        => "未知的智能体 `{given}`：`/gsd:new-project <名称> --agent <{agents}>`";
    UsageExtraWords: "`/gsd:{command}` takes one argument, `{arg}`; nothing was done because of the extra words `{extra}`: `{usage}`"
        => "`/gsd:{command}` 只接受一个参数 `{arg}`；因为多出的词 `{extra}`，什么也没做：`{usage}`";
    UsageNoProject: "say which project: `{usage}`" => "请说明是哪个项目：`{usage}`";
    UsageNoOption: "say which option: `{usage}`" => "请说明选哪个选项：`{usage}`";
    UsageNoFile: "say which file: `/gsd:file <path>`" => "请说明是哪个文件：`/gsd:file <路径>`";
    UsageRemindWhen: "say after how long: `/gsd:remind <minutes>` (or `30s`, `5m`), or `/gsd:remind off`, at most a day"
        => "请说明多久之后提醒：`/gsd:remind <分钟>`（或 `30s`、`5m`），或 `/gsd:remind off`，最长一天";
    UsageNotAMode: "`{given}` is not a permission mode: {modes}" => "`{given}` 不是权限模式：{modes}";
    UsageNoMode: "say which mode: `/gsd:mode <{modes}>`" => "请说明是哪个模式：`/gsd:mode <{modes}>`";
    UsageNoPane: "say which pane: `/gsd:adopt SESSION[:WINDOW.PANE][@HOST] [as NAME]`"
        => "请说明是哪个窗格：`/gsd:adopt 会话[:窗口.窗格][@主机] [as 名称]`";
    KeysNone: "say which keys: `/gsd:keys <key>…` with {keys}" => "请说明要发送哪些按键：`/gsd:keys <按键>…`，可用 {keys}";
    KeysTooMany: "at most {max} keys at a time, not {n}" => "一次最多 {max} 个按键，而不是 {n} 个";
    KeysUnknown: "`{word}` is not a key clawmux sends: {keys}" => "`{word}` 不是 clawmux 会发送的按键：{keys}";
    // Why an image from chat was not saved (`ImageNotSaved`).
    ImageNotServed: "the bot does not take it" => "机器人不接收它";
    ImageBusy: "{n} are being fetched already: send it again later" => "已有 {n} 张正在下载：请稍后再发";
    ImageNoProject: "this chat has no project to save it in" => "此会话没有可保存它的项目";
    ImageAdopted: "{project} is a pane adopted from a terminal, with no workspace of clawmux's to save it in"
        => "{project} 是从终端接管的窗格，没有 clawmux 的工作区可保存它";
    ImageRemote: "{project} runs on {host}, and images are saved only for projects on this machine"
        => "{project} 运行在 {host} 上，图片只为本机上的项目保存";
    ImageDownload: "could not download it: {error}" => "无法下载：{error}";
    ImageWrite: "could not write it: {error}" => "无法写入：{error}";
    DidYouMean: "Did you mean `{suggestion}`? Send `/gsd:help` for the list."
        => "你是不是想输入 `{suggestion}`？发送 `/gsd:help` 查看命令列表。";
    SendHelp: "Send `/gsd:help` for the commands clawmux knows."
        => "发送 `/gsd:help` 查看 clawmux 认识的命令。";
    NowUsing: "Now using {project}" => "已切换到 {project}";
    NotSwitched: "Not switched to {project}" => "未切换到 {project}";
    NoProjectChosen: "No project chosen" => "未选择项目";
    Sent: "Sent" => "已发送";

    // The console's own framing (`clawmux serve --console`).
    ConsoleServing: "clawmux: serving on the console ({why}); agent `{agent}`, state in {dir}."
        => "clawmux：在控制台上服务（{why}）；智能体 `{agent}`，状态目录 {dir}。";
    NoCredentials: "no FEISHU_APP_ID/FEISHU_APP_SECRET" => "没有 FEISHU_APP_ID/FEISHU_APP_SECRET";
    GreetEmpty: "Type /gsd:help, or /gsd:new-project demo to start."
        => "输入 /gsd:help，或输入 /gsd:new-project demo 开始。";
    GreetProjects: "Projects found: {names}. Type /gsd:status to see what each is doing, /gsd:use <project> to switch, /gsd:help for the rest."
        => "找到的项目：{names}。输入 /gsd:status 查看各项目在做什么，/gsd:use <project> 切换项目，/gsd:help 查看其余命令。";
    NothingLeftRunning: "No agent was left running." => "没有留下运行中的智能体。";
    LeftRunningUnknown: "Which agents still run is not known: tmux server `-L {socket}` did not say ({error}). List them with `tmux -L {socket} ls`."
        => "不知道哪些智能体仍在运行：tmux 服务器 `-L {socket}` 没有回答（{error}）。用 `tmux -L {socket} ls` 列出它们。";
    LeftRunning: "The agents keep running in tmux server `-L {socket}` (sessions {sessions}); the next `clawmux serve` picks them up. Watch one with `tmux -L {socket} attach -t {first}`; end them all with `tmux -L {socket} kill-server`."
        => "智能体仍在 tmux 服务器 `-L {socket}` 中运行（会话 {sessions}）；下次 `clawmux serve` 会接着使用它们。用 `tmux -L {socket} attach -t {first}` 查看其中一个；用 `tmux -L {socket} kill-server` 全部结束。";
    NoChatAsked: "{project} asks, and no chat uses it" => "{project} 在提问，但没有会话在使用它";
    NoChatAskedText: "{question}\n\nSend me `/gsd:inbox` to see it with its buttons and answer it."
        => "{question}\n\n向我发送 `/gsd:inbox` 查看它和它的按钮，并作答。";
    WaitingForAnswer: "Waiting for an answer (/gsd:inbox shows their buttons):"
        => "等待回答（/gsd:inbox 显示它们的按钮）：";
    ConsoleStopped: "clawmux: stopped ({reason}). {left}" => "clawmux：已停止（{reason}）。{left}";
    StopFinished: "finished" => "已结束";
    StopEndOfInput: "end of input" => "输入结束";
    StopIntakeLost: "no Feishu events can arrive" => "收不到飞书事件";
    ConsoleAnswerWith: "Answer with /gsd:answer {keys}" => "回答：/gsd:answer {keys}";
    ConsoleSeveral: " (several at once: /gsd:answer 1,3)" => "（可多选：/gsd:answer 1,3）";

    ButtonsUnavailable: "the console's buttons are unavailable" => "控制台的按钮不可用";
    SayWhichButton: "say which button: `/press N`, the number shown on its line"
        => "请说明按哪个按钮：`/press N`，N 是它所在行显示的编号";
    NoSuchButton: "no button `{which}` on a card still shown: press one by the number on its line"
        => "仍显示的卡片上没有按钮 `{which}`：请按它所在行的编号";
    NotAllowedClick: "You are not allowed to use this bot. Ask its operator for access."
        => "你没有使用此机器人的权限。请向管理员申请。";

    // Start-up lines on stderr (`serve`, and `run` with no `serve`).
    StateDbMissing: "clawmux: {db} is missing, though an earlier start moved the state of a previous clawmux into it: starting with empty state. The files that move kept ({kept}) are not read again: a command queued in them would be typed into its agent a second time. To use them anyway, see \"State directory\" in docs/OPERATIONS.md."
        => "clawmux：{db} 不见了，而之前的一次启动已把旧版 clawmux 的状态移入其中：以空状态启动。那次迁移保留的文件（{kept}）不会再被读取：其中排队的命令会被再次输入给智能体。如仍要使用它们，见 docs/OPERATIONS.md 的“State directory”一节。";
    OwnerPid: "pid {pid}" => "进程号 {pid}";
    OwnerPidUnknown: "pid not recorded" => "未记录进程号";
    AnotherServe: "another clawmux serve ({who}) uses the state directory {dir}; one serve at a time: stop it first, or give this one its own CLAWMUX_HOME"
        => "另一个 clawmux serve（{who}）正在使用状态目录 {dir}；同一时间只能有一个 serve：先停止它，或给这个 serve 另设 CLAWMUX_HOME";
    ServeWithoutSocket: "another clawmux serve ({who}) holds the state directory {dir}, but its run socket {socket} does not answer (it is still starting, or the socket was removed: then no `clawmux run` reaches that serve either). One serve at a time: if it has been running a while, restart it (`kill {pid}`, then start `clawmux serve` again)"
        => "另一个 clawmux serve（{who}）占用着状态目录 {dir}，但它的 run 套接字 {socket} 没有回应（它仍在启动，或套接字被删除了：那样任何 `clawmux run` 也连不上那个 serve）。同一时间只能有一个 serve：如果它已运行了一段时间，请重启它（`kill {pid}`，再启动 `clawmux serve`）";
    WaitingForRun: "clawmux: a clawmux run is using the state directory {dir} ({who}); serving once it ends"
        => "clawmux：一个 clawmux run 正在使用状态目录 {dir}（{who}）；它结束后开始服务";
    OwnerHeldTooLong: "the state directory {dir} has been held by {who} for {secs} s, longer than a clawmux run takes (its longest command timeout and its agent's start): it is not a run about to end. See what holds it with {find}, stop that, and start `clawmux serve` again"
        => "状态目录 {dir} 已被 {who} 占用 {secs} 秒，超过一次 clawmux run 所需的时间（最长的命令超时加上智能体的启动）：它不是一个即将结束的 run。用 {find} 查看是谁占用着它，停止它，再启动 `clawmux serve`";

    // `clawmux run`'s lines on stderr while it waits.
    RunSent: "clawmux: {project}: sent, waiting for the agent" => "clawmux：{project}：已发送，等待智能体";
    RunProgress: "clawmux: progress: {summary}" => "clawmux：进度：{summary}";
    RunWorking: "{project}: working, {secs} s" => "{project}：运行中，{secs} 秒";

    // `clawmux run`.
    AnswerWith: "Answer with: clawmux run --project {project} --prompt {prompt} --answer {keys}"
        => "回答方式：clawmux run --project {project} --prompt {prompt} --answer {keys}";
    ProgressSoFar: "Progress so far: {progress}" => "目前进度：{progress}";
    StillRunning: "The command is still running in its pane." => "命令仍在窗格中运行。";
    RunRefused: "the agent refused the command: {line}" => "智能体拒绝了该命令：{line}";
    RunNotTaken: "the agent did not take the command" => "智能体没有接收该命令";
    RunUnknownFailure: "unknown failure" => "未知的失败";
    RunPaneSilentInTime: "the project's pane did not answer in time" => "项目的窗格没有及时回应";
    RunKeysSent: "Sent {names} to the agent: it stops what it is doing."
        => "已向智能体发送 {names}：它会停下正在做的事。";
    RunWaitingFor: "waiting for an answer: {question}" => "等待回答：{question}";
    RunStateWorking: "working" => "工作中";

    // Why something was refused (`present::words::ChatWords`): the English
    // is the error's own `Display`, word for word.
    ErrStopped: "the project stopped" => "项目已停止";
    ErrOverloaded: "the project is not keeping up with its commands; try again in a moment"
        => "项目处理不过来它的命令；请稍后再试";
    ErrQueueFull: "{n} commands are already waiting; try again later"
        => "已有 {n} 条命令在排队；请稍后再试";
    ErrNotAttached: "the agent pane is not attached" => "智能体的窗格未关联";
    ErrOtherPrompt: "another prompt is on screen now; answer that one"
        => "屏幕上现在是另一个提示；请先回答它";
    ErrNothingRunning: "nothing is running" => "没有正在运行的命令";
    ErrAnswering: "an answer is still being typed into this prompt" => "此提示的回答仍在输入中";
    ErrModeNotReached: "{mode} mode is not among the modes shift+tab cycles through in this session (it shows {shown}); set `permission_mode = \"{mode}\"` for the project and restart its agent"
        => "{mode} 模式不在此会话中 shift+tab 可切换的模式里（它显示 {shown}）；请为项目设置 `permission_mode = \"{mode}\"` 并重启它的智能体";
    ErrNotIdle: "the agent is busy or asking: switch its mode once it waits for input"
        => "智能体正忙或正在提问：等它等待输入时再切换模式";
    ErrNotTaken: "the agent did not take the answer: its dialog is still on screen, unchanged, after the key was sent {tries} times"
        => "智能体没有接受回答：按键已发送 {tries} 次，它的对话框仍原样留在屏幕上";
    ErrPane: "{detail}" => "智能体的窗格无法使用：{detail}";
    // Why a pane could not be used (`PaneError`); tmux's own message is a
    // detail, filled in as tmux wrote it.
    ErrPaneTmux: "tmux: {detail}" => "tmux 出错：{detail}";
    ErrPaneCreate: "could not run tmux to create session {session}: {reason}"
        => "无法运行 tmux 来创建会话 {session}：{reason}";
    ErrPaneWorkspace: "cannot create the workspace {workspace}: {reason}"
        => "无法创建工作区 {workspace}：{reason}";
    ErrPaneNoSession: "session {session} does not exist" => "会话 {session} 不存在";
    ErrPaneNoPane: "session {session} has no pane" => "会话 {session} 没有窗格";
    ErrPaneUnreachable: "host {host} is unreachable: {message}" => "无法连接主机 {host}：{message}";
    ErrPaneTooMuchOutput: "host {host} printed more than {mib} MiB for one tmux command; nothing of it was used"
        => "主机 {host} 为一条 tmux 命令输出了超过 {mib} MiB，其中的内容均未使用";
    ErrPaneNotAdoptable: "pane {pane} is not in a session clawmux may adopt: {reason}"
        => "窗格 {pane} 不在 clawmux 可以接管的会话中：{reason}";
    ErrPaneNotTheAdopted: "pane {pane} is no longer the pane adopted as this project: {reason}. Nothing was typed or read; `/gsd:release` the project and `/gsd:adopt` the pane again"
        => "窗格 {pane} 已不是作为此项目接管的窗格：{reason}。没有输入也没有读取任何内容；请先 `/gsd:release` 此项目，再重新 `/gsd:adopt` 该窗格";
    AdoptedOldRecord: "it was adopted by an older clawmux, which kept only its id"
        => "它由旧版 clawmux 接管，当时只记下了窗格编号";
    AdoptedServerRestarted: "its tmux server restarted (process {then} then, {now} now)"
        => "它的 tmux 服务器已重启（之前是进程 {then}，现在是 {now}）";
    AdoptedOtherProgram: "the pane runs another program (process {then} then, {now} now)"
        => "窗格运行的是另一个程序（之前是进程 {then}，现在是 {now}）";
    AdoptedMoved: "it moved from window {then_window} of session {then_session} to window {now_window} of session {now_session}"
        => "它已从会话 {then_session} 的窗口 {then_window} 移到会话 {now_session} 的窗口 {now_window}";
    ErrPaneNotOpen: "the agent's pane is not open" => "智能体的窗格未打开";
    ErrReplaced: "{detail}" => "窗格现在运行的是另一个程序，因此没有输入任何内容：{detail}";
    ErrLostAgain: "the session was lost again ({reason}); not retrying"
        => "会话再次丢失（{reason}）；不再重试";
    ErrNotResumed: "the command was running when clawmux restarted, and {error}"
        => "clawmux 重启时该命令正在运行，而{error}";
    ErrProfile: "{detail}" => "无法使用智能体的配置：{detail}";
    ErrNoApprovalWaiting: "no approval is waiting in this project (workspace {workspace})"
        => "此项目中没有等待处理的审批（工作区 {workspace}）";
    ErrNotAnOption: "`{key}` is not one of the options ({keys})" => "`{key}` 不是可选项之一（{keys}）";
    ErrNotAlone: "`{key}` cannot be chosen together with others: only a multi-select list's options can"
        => "`{key}` 不能与其他选项同时选择：只有多选列表的选项可以";
    ErrNotApprover: "You are not allowed to answer approvals." => "你无权处理审批。";
    ErrProjectNameEmpty: "project name is empty; use lowercase letters, digits, `.`, `_` or `-`, e.g. `my-app`"
        => "项目名为空；请使用小写字母、数字、`.`、`_` 或 `-`，例如 `my-app`";
    ErrHostNameEmpty: "host name is empty; use lowercase letters, digits, `.`, `_` or `-`, e.g. `my-app`"
        => "主机名为空；请使用小写字母、数字、`.`、`_` 或 `-`，例如 `my-app`";
    ErrProjectNameTooLong: "project name `{name}` is too long (at most {max} characters)"
        => "项目名 `{name}` 太长（最多 {max} 个字符）";
    ErrHostNameTooLong: "host name `{name}` is too long (at most {max} characters)"
        => "主机名 `{name}` 太长（最多 {max} 个字符）";
    ErrProjectName: "project name `{name}` must start with a lowercase letter or digit and contain only a-z, 0-9, `.`, `_`, `-` (found {found})"
        => "项目名 `{name}` 必须以小写字母或数字开头，且只能包含 a-z、0-9、`.`、`_`、`-`（发现 {found}）";
    ErrHostName: "host name `{name}` must start with a lowercase letter or digit and contain only a-z, 0-9, `.`, `_`, `-` (found {found})"
        => "主机名 `{name}` 必须以小写字母或数字开头，且只能包含 a-z、0-9、`.`、`_`、`-`（发现 {found}）";
    ErrEmptyMessage: "the message is empty" => "消息为空";
    ErrMessageTooLong: "the message is {n} characters long; at most {max} can be typed into the agent"
        => "消息长 {n} 个字符；最多只能向智能体输入 {max} 个";
    ErrControlChar: "the message contains a control character ({c}); only printable text is typed into the agent"
        => "消息含有控制字符（{c}）；只有可打印的文字才会输入给智能体";
    ErrNotAdoptableSession: "`{session}` is not a session name clawmux adopts: use letters, digits, `-` and `_` (at most {max})"
        => "`{session}` 不是 clawmux 可接管的会话名：请使用字母、数字、`-` 和 `_`（最多 {max} 个）";
    ErrNotWindowPane: "`{pane}` is not WINDOW.PANE: use numbers, e.g. `{session}:1.0`"
        => "`{pane}` 不是 WINDOW.PANE：请用数字，例如 `{session}:1.0`";
    ErrNoAnswer: "its tmux server did not answer in time" => "它的 tmux 服务器没有及时回应";
    ErrNotInWorkspace: "`{path}` is not in the project's workspace: no such file there, or outside it (no `..`, no absolute path; symlinks are resolved)"
        => "`{path}` 不在项目的工作区中：那里没有这个文件，或者它在工作区之外（不能用 `..`，不能用绝对路径；符号链接会被解析）";
    ErrNotAFile: "`{path}` is not a regular file" => "`{path}` 不是普通文件";
    ErrFileTooLarge: "`{path}` is {size} bytes; at most {max} bytes are sent"
        => "`{path}` 有 {size} 字节；最多只发送 {max} 字节";
    ErrUnreadable: "cannot read `{path}`: {why}" => "无法读取 `{path}`：{why}";
    ErrUnknownHost: "no host {host} is configured; known hosts: {known}"
        => "没有配置主机 {host}；已知主机：{known}";

    // What a permission mode lets reach the chat.
    EveryApprovalReaches: "every approval reaches this chat" => "每个审批都会发到此会话";
    UnaskedEdits: "file edits are approved without asking" => "修改文件无需询问即被批准";
    UnaskedAuto: "the agent approves its own commands and edits" => "智能体自行批准它的命令和修改";
    UnaskedNothing: "nothing asks for approval" => "任何操作都不再请求审批";

    // The status table's cells and the GSD planning line.
    StateStarting: "starting its agent" => "正在启动智能体";
    StateAwaitingApproval: "awaiting approval" => "等待审批";
    StateBusy: "busy" => "忙碌";
    StateIdle: "idle" => "空闲";
    StateNotAttached: "not attached" => "未关联";
    HostLocal: "local" => "本机";
    HostAdopted: "{host} (adopted {pane})" => "{host}（接管的 {pane}）";
    WaitsOnYou: " · **waits on you**" => " · **等你处理**";
    PlanningUnreadable: "cannot read: {error}" => "无法读取：{error}";
    PlanningPhase: "phase {n} of {m}{name}" => "第 {n}/{m} 阶段{name}";
    PlanningPlan: "plan {a} of {b}" => "第 {a}/{b} 个计划";
    PlanningDone: "{done}/{total} plans done" => "已完成 {done}/{total} 个计划";
    GsdLine: "GSD: {line}" => "GSD 进度：{line}";

    // Durations and times (`present::words`).
    DurationSeconds: "{s} s" => "{s} 秒";
    DurationMinutes: "{m} min {s} s" => "{m} 分 {s} 秒";
    DurationHours: "{h} h {m} min" => "{h} 小时 {m} 分";
    FooterTime: "⏱ {duration}" => "⏱ 用时 {duration}";
    FooterTokens: "{n} tokens" => "{n} 个令牌";
    FooterContext: "context {n} tokens" => "上下文 {n} 个令牌";

    // The whole help.
    HelpText: super::HELP => HELP_ZH;
    GsdHelpNote: "**GSD's own commands** are typed in the spelling the project's GSD install takes (`/gsd-<name>` for GSD's default global install, `/gsd:<name>` for a project-local one); either spelling may be sent. `/gsd:help gsd` shows GSD's own help; `/gsd:new-project <name> [args]` creates the project, then runs GSD's `new-project [args]` in it (without a name, `/gsd:new-project [--auto …]` runs GSD's in the current project)."
        => "**GSD 自己的命令**按项目中 GSD 的安装方式书写（GSD 默认全局安装用 `/gsd-<name>`，项目内安装用 `/gsd:<name>`），两种写法都可以发送。`/gsd:help gsd` 显示 GSD 自己的帮助；`/gsd:new-project <name> [args]` 先创建项目，再在其中运行 GSD 的 `new-project [args]`（不带名字时，`/gsd:new-project [--auto …]` 在当前项目中运行 GSD 的同名命令）。";
}

/// `/gsd:help` in Chinese: the same commands (never translated) as
/// [`super::HELP`], line for line.
const HELP_ZH: &str = "\
**GSD 命令**会发给当前项目的智能体，例如 `/gsd:plan-phase 2` 或 `/gsd-progress`。

**clawmux 命令**
- `/gsd:new-project <name>[@host]`：创建项目（工作区 + 会话）并切换到它；指定主机时在该主机上创建
- `/gsd:use <name>`：之后的消息发给该项目
- `/gsd:projects`：列出项目并选择一个
- `/gsd:status`：每个项目正在做什么
- `/gsd:cancel`：在智能体中按 Esc，仅限审批人（运行中命令的进度卡片上有供审批人使用的「中断」按钮）
- `/gsd:inbox`：所有等待回答的审批、问题和检查点，最早的在前，附带按钮（`/gsd:inbox gsd` 是 GSD 自己的收件箱）
- `/gsd:file <path>`：发送项目工作区中的文件（仅限工作区内，最大 30 MB）
- `/gsd:remind <minutes>|<N>s|off`：提示等待这么久后，在这里再显示一次（默认关闭）
- `/gsd:keys <key>…`：向智能体的窗格发送 Esc、Enter、Tab、Shift+Tab、Up、Down、Left、Right 或 Ctrl-C（仅限审批人）
- `/gsd:mode [manual|auto|plan|acceptEdits|bypassPermissions]`：查看或切换智能体的权限模式（仅限审批人；`manual` 会把每个审批都发到这里）
- `/gsd:answer <key>`：回答待处理的审批（或点它的按钮）
- `/gsd:sessions`：所有主机上的 tmux 会话和窗格
- `/gsd:screen`：当前项目此刻的屏幕
- `/gsd:adopt SESSION[:WINDOW.PANE][@host] [as <name>]`：监视你已在运行的窗格（仅限审批人）
- `/gsd:release <name>`：停止监视接管的窗格，保持其原样
- `/gsd:help`：显示本帮助

普通文字会作为提示输入给智能体。回复问题的卡片即可用你自己的话回答它。";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::placeholders;

    /// Every key has words in both languages, with the same placeholders,
    /// and the same markdown marks (bold, code), so a filled message
    /// renders alike in both.
    #[test]
    fn every_key_has_both_languages_with_the_same_placeholders() {
        let count = |s: &str, pat: &str| s.matches(pat).count();
        for &m in Msg::ALL {
            let (en, zh) = (m.template(Lang::En), m.template(Lang::Zh));
            assert!(!en.trim().is_empty(), "{m:?} has no English");
            assert!(!zh.trim().is_empty(), "{m:?} has no Chinese");
            assert_eq!(placeholders(en), placeholders(zh), "{m:?}: {en:?} / {zh:?}");
            for mark in ["**", "`", "\n"] {
                assert_eq!(
                    count(en, mark),
                    count(zh, mark),
                    "{m:?}: `{mark}` in {en:?} / {zh:?}"
                );
            }
            let cjk = zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
            assert!(cjk || zh == en, "{m:?}: its Chinese has no Chinese: {zh:?}");
        }
    }

    /// The Chinese help lists the same commands, in the same order.
    #[test]
    fn the_chinese_help_lists_the_same_commands() {
        let commands = |help: &str| -> Vec<String> {
            help.lines()
                .filter_map(|l| l.strip_prefix("- `"))
                .filter_map(|l| l.split_once('`').map(|(c, _)| c.to_string()))
                .collect()
        };
        let (en, zh) = (commands(super::super::HELP), commands(HELP_ZH));
        assert!(en.len() > 10, "{en:?}");
        assert_eq!(en, zh);
    }

    #[test]
    fn filled_messages_keep_their_values_untranslated() {
        let t = Msg::ScreenOf.with(&[("project", "web {x}")]);
        assert_eq!(t.get(Lang::En), "Screen of web {x}");
        assert_eq!(t.get(Lang::Zh), "web {x} 的屏幕");
    }
}
