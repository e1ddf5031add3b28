// obsidian-tc console: the one script (the pages' CSP allows no other). It only makes the
// "Copy" buttons copy: every page works without it.
document.addEventListener('click', function (event) {
  var button = event.target.closest('button[data-copy]');
  if (!button) return;
  var source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  var text = source.innerText;
  var done = function () {
    button.textContent = 'Copied';
    setTimeout(function () { button.textContent = 'Copy'; }, 1500);
  };
  var select = function () {
    var range = document.createRange();
    range.selectNodeContents(source);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  };
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(done, select);
  } else {
    select();
  }
});
