// What the web chat page shows, read from its DOM: shared by the browser tests.
export const chatView = (page) => page.evaluate(() => {
  const last = [...document.querySelectorAll(".msg.assistant")].pop();
  const think = last && last.querySelector("details.thinking");
  return {
    streaming: !document.getElementById("stop").hidden,
    answer: last ? last.querySelector(".answer").innerText : "",
    thinkingShown: !!think && !think.hidden,
    thinking: think ? think.querySelector(".think-body").textContent : "",
    note: last ? last.querySelector(".note").textContent : "",
    meta: last ? last.querySelector(".meta").textContent : "",
    users: [...document.querySelectorAll(".msg.user .bubble")].map((b) => b.textContent),
    assistants: document.querySelectorAll(".msg.assistant").length,
    banner: (document.querySelector(".banner") || {}).textContent || "",
    title: document.getElementById("conv-title").textContent,
    list: [...document.querySelectorAll("#conv-list .conv-title")].map((t) => t.textContent),
    current: (document.querySelector('#conv-list [aria-current="true"] .conv-title') || {}).textContent || "",
  };
});
